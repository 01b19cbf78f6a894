// What laurel's pages share: building elements, calling the API, the status line and a few
// labels. The boards' pages (app.js) and the admin console (admin.js) take it from
// window.laurelUI. No framework, no build step.
'use strict';
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

  class ApiError extends Error {
    constructor(status, code, message, field) {
      super(message);
      this.status = status;
      this.code = code;
      this.field = field || '';
    }
  }

  // request calls the API with key as its bearer and returns the answer's JSON (null for
  // 204), or throws an ApiError carrying the API's error code and field.
  async function request(method, path, { params, body, key } = {}) {
    const u = new URL(path, location.origin);
    for (const [k, v] of Object.entries(params || {})) {
      if (v !== undefined && v !== null && v !== '') u.searchParams.set(k, v);
    }
    const headers = {};
    if (key) headers.Authorization = 'Bearer ' + key;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    let res;
    try {
      res = await fetch(u, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
    } catch (err) {
      throw new ApiError(0, 'network', 'the server cannot be reached');
    }
    if (res.status === 204) return null;
    let out = null;
    try { out = await res.json(); } catch (err) { /* not JSON */ }
    if (!res.ok) {
      const e = (out && out.error) || {};
      throw new ApiError(res.status, e.code || 'http_' + res.status, e.message || res.statusText, e.field);
    }
    return out;
  }

  function setStatus(state, text) {
    statusEl.dataset.state = state;
    statusEl.replaceChildren(state === 'idle' ? '' : h('i', { 'aria-hidden': 'true' }), text || '');
  }

  // say shows text in el, or hides el when there is none.
  function say(el, text) {
    el.textContent = text || '';
    el.hidden = !text;
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
    return `${mode} · ${order}`;
  }

  // scoreText writes a score with the thousands separators of the reader's locale and the
  // board's unit, its metadata's "unit" ("ms", "pts") when it has one: "48,127 ms".
  function scoreText(b, v) {
    const u = b && b.metadata && typeof b.metadata.unit === 'string' ? b.metadata.unit.trim() : '';
    return u ? `${num.format(v)} ${u}` : num.format(v);
  }

  return { num, enc, h, svg, ApiError, request, setStatus, say, windowLabel, describe, scoreText };
})();
