// What laurel's pages share: building elements, calling the API (through the JavaScript
// client, clients/js, which laurel serves as laurel.js), the status line and a few labels.
// The boards' pages (app.js) and the admin console (admin.js) take it from window.laurelUI.
// No framework, no build step.
import { Laurel, LaurelError } from './laurel.js';

window.laurelUI = (() => {
  const statusEl = document.getElementById('status');
  const num = new Intl.NumberFormat();
  const enc = encodeURIComponent;

  // h builds an element. Text always goes in as text: names come from players.
  function h(tag, props, ...kids) {
    const el = document.createElement(tag);
    setProps(el, props);
    for (const k of kids.flat(Infinity)) if (k != null && k !== false) el.append(k);
    return el;
  }
  function svg(tag, props, ...kids) {
    const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
    setProps(el, props);
    for (const k of kids.flat(Infinity)) if (k != null && k !== false) el.append(k);
    return el;
  }
  function setProps(el, props) {
    for (const [k, v] of Object.entries(props || {})) {
      if (v == null || v === false) continue;
      if (k === 'class') el.setAttribute('class', v);
      else if (k === 'text') el.textContent = v;
      else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? '' : v);
    }
  }

  // request calls the API with key as its bearer and returns the answer's JSON (null for
  // 204), or throws the client's LaurelError, carrying the API's error code and field (status
  // 0 when the server cannot be reached). Empty parameters are left out. The pages retry by
  // themselves (polling, the stream's reconnects), so the client does not.
  async function request(method, path, { params, body, key } = {}) {
    const query = {};
    for (const [k, v] of Object.entries(params || {})) {
      if (v !== undefined && v !== null && v !== '') query[k] = v;
    }
    const client = new Laurel({ url: location.origin, key: key || undefined, retries: 0,
      fetch: (u, o) => fetch(u, { ...o, cache: 'no-store' }) });
    try {
      const out = await client.request(method, path, { query, body });
      return out === undefined ? null : out;
    } catch (err) {
      if (err instanceof LaurelError && err.status === 0) err.message = 'The server cannot be reached.';
      throw err;
    }
  }

  function setStatus(state, text) {
    // Unchanged, it is left alone: a screen reader would announce the live region again.
    if (statusEl.dataset.state === state && statusEl.textContent === (text || '')) return;
    statusEl.dataset.state = state;
    statusEl.replaceChildren(state === 'idle' ? '' : h('i', { 'aria-hidden': 'true' }), text || '');
  }

  // say shows text in el, or hides el when there is none; kind 'error' shows it as one.
  function say(el, text, kind) {
    el.textContent = text || '';
    el.hidden = !text;
    el.dataset.kind = kind || '';
  }

  function windowLabel(w) {
    const fixed = { all: 'All time', hour: 'This hour', day: 'Today', week: 'This week', month: 'This month', year: 'This year' };
    if (fixed[w]) return fixed[w];
    const m = /^last(\d+)([dh])$/.exec(w);
    if (m) return `Last ${m[1]} ${m[2] === 'd' ? (m[1] === '1' ? 'day' : 'days') : (m[1] === '1' ? 'hour' : 'hours')}`;
    return w;
  }

  function describe(b) {
    const order = b.order === 'asc' ? 'lowest wins' : 'highest wins';
    const mode = { sum: 'scores add up', best: 'best score counts', last: 'latest score counts' }[b.mode] || b.mode;
    if (!b.subscore) return `${mode} · ${order}`;
    return `${mode} · ${order} · ties: ${b.subscore === 'asc' ? 'lowest' : 'highest'} subscore`;
  }

  // The units of time a board's scores may be in (its metadata's "unit"), each with the digits
  // of a second it has: such scores read as times.
  const TIME_UNITS = { s: 0, cs: 2, ms: 3 };

  // scoreText writes a score of board b as its metadata's "unit" says. In a unit of time
  // ("ms", "cs", "s") it is a time as a racing game's timing screen writes one, minutes and
  // seconds to the unit's precision: 43700 ms is "0:43.700", 3723456 ms "1:02:03.456" (the
  // same shape above and below a minute, so that a column of times compares at a glance).
  // Otherwise it has the thousands separators of the reader's locale and the unit, if any:
  // "48,127 pts".
  function scoreText(b, v) {
    const u = b && b.metadata && typeof b.metadata.unit === 'string' ? b.metadata.unit.trim() : '';
    if (Object.hasOwn(TIME_UNITS, u)) return timeText(v, TIME_UNITS[u]);
    return u ? `${num.format(v)} ${u}` : num.format(v);
  }

  // timeText writes v, a time in 10^-digits of a second, as [h:]m:ss[.fff].
  function timeText(v, digits) {
    const pad = (x, width) => String(x).padStart(width, '0');
    const per = 10 ** digits;
    const abs = Math.abs(v);
    const secs = Math.floor(abs / per);
    const s = secs % 60, m = Math.floor(secs / 60) % 60, hr = Math.floor(secs / 3600);
    const clock = hr ? `${hr}:${pad(m, 2)}:${pad(s, 2)}` : `${m}:${pad(s, 2)}`;
    return (v < 0 ? '-' : '') + clock + (digits ? '.' + pad(abs % per, digits) : '');
  }

  return { num, enc, h, svg, request, setStatus, say, windowLabel, describe, scoreText };
})();
