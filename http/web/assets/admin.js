// laurel's admin console, at /admin: the review queue worked, boards created and edited,
// members looked up across boards, hidden, shown or erased, and the server's health from
// /metrics. It asks for an admin
// key and keeps it in this tab's session storage only: never in the URL, never in local storage.
'use strict';
(() => {
  if (location.pathname !== '/admin') return;
  const { num, enc, h, request, setStatus, say, windowLabel, describe, scoreText } = window.laurelUI;
  const app = document.getElementById('app');
  const footEl = document.getElementById('foot');
  const STORED = 'laurel.adminKey';
  const POLL = 2000; // ms between two reads of /metrics: rates are over this interval
  let key = sessionStorage.getItem(STORED) || '';
  const call = (method, path, opts) => request(method, path, { ...opts, key });
  const timers = [];

  document.title = 'Admin · laurel';
  document.getElementById('admin-link').hidden = true;
  start();

  // start opens the console when the stored key (or an open server) is an admin's, and asks
  // for a key otherwise.
  async function start() {
    let who = null;
    try {
      who = await call('GET', '/v1/whoami');
    } catch (err) {
      if (err.status === 0) return signIn('The server cannot be reached.');
    }
    if (who && who.scope === 'admin') return consolePage(who);
    if (key) sessionStorage.removeItem(STORED);
    key = '';
    signIn('');
  }

  function signIn(message) {
    for (const t of timers.splice(0)) clearInterval(t);
    setStatus('idle');
    const input = h('input', { id: 'admin-key', type: 'password', autocomplete: 'off', spellcheck: 'false', required: true, 'aria-label': 'Admin key', placeholder: 'Admin key' });
    const msg = h('p', { class: 'field-error', id: 'login-msg', role: 'alert', hidden: !message, text: message });
    const form = h('form', { class: 'login', id: 'login' },
      h('label', { for: 'admin-key', text: 'Admin key' }), input, h('button', { type: 'submit', text: 'Open the console' }), msg);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const typed = input.value.trim();
      let who;
      try {
        who = await request('GET', '/v1/whoami', { key: typed });
      } catch (err) {
        say(msg, err.code === 'unauthenticated' ? 'This key is not known to the server.' : err.message);
        return;
      }
      if (who.scope !== 'admin') {
        say(msg, `This is a ${who.scope} key: the console needs an admin key.`);
        return;
      }
      key = typed;
      sessionStorage.setItem(STORED, key);
      consolePage(who);
    });
    app.replaceChildren(h('section', { class: 'intro' }, h('h1', { text: 'Admin' }),
      h('p', { class: 'sub', text: 'The key stays in this tab only, until you sign out or close it.' })), form);
    app.setAttribute('aria-busy', 'false');
    input.focus();
  }

  function consolePage(who) {
    const signOut = h('button', { type: 'button', id: 'signout', text: 'Sign out', hidden: who.open, onclick: () => {
      sessionStorage.removeItem(STORED);
      key = '';
      signIn('');
    } });
    app.replaceChildren(
      h('section', { class: 'intro admin-head' },
        h('div', null, h('h1', { text: 'Admin' }),
          h('p', { class: 'sub', text: who.open ? 'No key is configured: this server is open to anyone who can reach it.' : 'Signed in with an admin key.' })),
        signOut),
      healthSection(), reviewSection(), boardsSection(), hooksSection(), membersSection());
    app.setAttribute('aria-busy', 'false');
  }

  // ---- health, from /metrics and /readyz ----

  function healthSection() {
    const cards = h('div', { class: 'tiles', id: 'health' });
    const tiles = {};
    for (const [id, label] of [['store', 'Store'], ['ingest', 'Ingest'], ['requests', 'API requests'], ['p99', 'Request p99'],
      ['errors', 'Server errors'], ['commit', 'Commit p99'], ['streams', 'Live streams'], ['memory', 'Memory']]) {
      tiles[id] = h('b', { text: '–' });
      tiles[id + 'Note'] = h('small');
      cards.append(h('div', { class: 'tile', 'data-metric': id }, h('span', { class: 'label', text: label }), tiles[id], tiles[id + 'Note']));
    }
    let prev = null;
    async function poll() {
      let ready, text;
      try {
        const [r, m] = await Promise.all([fetch('/readyz', { cache: 'no-store' }), fetch('/metrics', { cache: 'no-store' })]);
        ready = r.ok;
        text = await m.text();
      } catch (err) {
        setStatus('error', 'Offline');
        tiles.store.textContent = 'unreachable';
        return;
      }
      const cur = { at: Date.now(), m: parseMetrics(text) };
      tiles.store.textContent = ready ? 'ready' : 'not ready';
      tiles.store.parentElement.dataset.state = ready ? 'ok' : 'bad';
      tiles.storeNote.textContent = ready ? 'answers /readyz' : '/readyz answers 503';
      const since = prev ? `over the last ${Math.round((cur.at - prev.at) / 1000)} s` : 'since the start';
      const base = prev || { at: cur.at - 1000, m: new Map() }; // no previous read: the totals since start
      const dt = Math.max(0.001, (cur.at - base.at) / 1000);
      const delta = (name, f) => sum(cur.m, name, f) - sum(base.m, name, f);
      // The API's requests: /v1/… but live streams, whose duration is how long they stayed
      // open. The page's own files, /metrics and /readyz are left out; server errors of any route count.
      const api = (l) => /^[A-Z]+ \/v1\//.test(l.route || '') && !/\/stream$/.test(l.route);
      const failed = (l) => l.status >= '500';
      if (prev) {
        tiles.ingest.textContent = rate(delta('laurel_events_applied_total') / dt, 'events/s');
        tiles.requests.textContent = rate(delta('laurel_http_requests_total', api) / dt, 'req/s');
        tiles.errors.textContent = rate(delta('laurel_http_requests_total', failed) / dt, 'errors/s');
      } else {
        tiles.ingest.textContent = num.format(sum(cur.m, 'laurel_events_applied_total')) + ' events';
        tiles.requests.textContent = num.format(sum(cur.m, 'laurel_http_requests_total', api)) + ' req';
        tiles.errors.textContent = num.format(sum(cur.m, 'laurel_http_requests_total', failed));
      }
      for (const id of ['ingest', 'requests', 'errors']) tiles[id + 'Note'].textContent = since;
      let over;
      [tiles.p99.textContent, over] = p99(cur.m, prev && prev.m, 'laurel_http_request_duration_seconds', api);
      tiles.p99Note.textContent = 'API requests, ' + over;
      [tiles.commit.textContent, over] = p99(cur.m, prev && prev.m, 'laurel_store_commit_duration_seconds');
      tiles.commitNote.textContent = 'a group commit with its fsync, ' + over;
      tiles.streams.textContent = num.format(sum(cur.m, 'laurel_streams'));
      tiles.streamsNote.textContent = 'open now';
      tiles.memory.textContent = bytes(sum(cur.m, 'process_resident_memory_bytes'));
      tiles.memoryNote.textContent = 'resident; Go heap ' + bytes(sum(cur.m, 'go_memstats_heap_inuse_bytes'));
      cards.dataset.reads = String(+(cards.dataset.reads || 0) + 1);
      setStatus(ready ? 'live' : 'error', ready ? 'Live' : 'Not ready');
      prev = cur;
    }
    poll();
    timers.push(setInterval(poll, POLL));
    return h('section', { class: 'admin-section' }, h('h2', { text: 'Health' }), cards);
  }

  // parseMetrics reads Prometheus's text format into name → [{labels, value}].
  function parseMetrics(text) {
    const out = new Map();
    for (const line of text.split('\n')) {
      const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
      if (!m) continue;
      const labels = {};
      for (const [, k, v] of (m[2] || '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[k] = v;
      if (!out.has(m[1])) out.set(m[1], []);
      out.get(m[1]).push({ labels, value: Number(m[3]) });
    }
    return out;
  }

  function sum(metrics, name, filter) {
    let s = 0;
    for (const x of metrics.get(name) || []) if (!filter || filter(x.labels)) s += x.value;
    return s;
  }

  // p99 gives the 99th percentile of a histogram between two reads, or since the start when
  // nothing was observed in between, and says over which span.
  function p99(cur, prev, name, filter) {
    const recent = prev && quantile(cur, prev, name, filter);
    if (recent) return [recent, `over the last ${Math.round(POLL / 1000)} s`];
    return [quantile(cur, null, name, filter) || 'none yet', 'since the start'];
  }

  // quantile gives the 99th percentile of a histogram between two reads (or since the start),
  // as the upper bound of the bucket that holds it; '' when it observed nothing.
  function quantile(cur, prev, name, filter) {
    const counts = new Map(); // le → count
    const add = (metrics, sign) => {
      for (const x of (metrics && metrics.get(name + '_bucket')) || []) {
        if (filter && !filter(x.labels)) continue;
        counts.set(x.labels.le, (counts.get(x.labels.le) || 0) + sign * x.value);
      }
    };
    add(cur, 1);
    add(prev, -1);
    const les = [...counts.keys()].sort((a, b) => Number(a) - Number(b));
    const total = counts.get('+Inf') || 0;
    if (!total) return '';
    for (const le of les) {
      if (counts.get(le) >= 0.99 * total) return le === '+Inf' ? 'over ' + ms(Number(les[les.length - 2])) : '≤ ' + ms(Number(le));
    }
    return '–';
  }

  const rate = (v, unit) => `${num.format(Math.round(v * 10) / 10)} ${unit}`;
  const ms = (s) => (s < 0.001 ? `${num.format(s * 1e6)} µs` : s < 1 ? `${num.format(s * 1000)} ms` : `${num.format(s)} s`);
  function bytes(n) {
    const units = ['B', 'KiB', 'MiB', 'GiB'];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return `${num.format(Math.round(n * 10) / 10)} ${units[i]}`;
  }

  // ---- the review queue ----

  // reviewSection lists the open flags (docs/api.md, "Flags and the review queue"), oldest
  // first: each member held by a hold rule or reported by the game, with what held it, and
  // Clear (a false alarm: back with its events) and Confirm (its held events retracted, the
  // member kept hidden), which asks twice.
  function reviewSection() {
    const msg = h('p', { class: 'form-msg', id: 'review-msg', role: 'status', hidden: true });
    const resolve = async (f, action) => {
      try {
        await call('POST', '/v1/flags/' + enc(f.id), { body: { action } });
        say(msg, action === 'clear' ? `${f.member} is back on every board.` : `${f.member}'s held events are retracted; ${f.member} stays hidden.`);
      } catch (err) {
        say(msg, err.message, 'error');
      }
      flags.refresh();
    };
    const flags = listed({
      id: 'admin-flags', path: '/v1/flags', params: { state: 'open' }, field: 'flags', heads: ['Member', 'Board', 'Why', 'Held events', 'Opened', ''],
      empty: 'No open flags: no one is held for review.',
      row: (f) => h('tr', { 'data-flag': f.id, 'data-member': f.member },
        h('td', { text: f.member }),
        h('td', null, h('a', { href: '/boards/' + enc(f.board), text: f.board })),
        h('td', { text: f.rule ? `the ${f.rule} rule` : `reported: ${f.reason}` }),
        h('td', { class: 'num', text: f.events.map((ev) => `${num.format(ev.value)}${ev.id ? ` (${ev.id})` : ''}`).join(', ') || '–' }),
        h('td', { text: new Date(f.opened).toLocaleString() }),
        h('td', null, h('div', { class: 'actions' },
          h('button', { type: 'button', class: 'clear', text: 'Clear', onclick: () => resolve(f, 'clear') }),
          Object.assign(confirmButton('Confirm', `Retract ${f.member}'s held events and keep ${f.member} hidden?`, () => resolve(f, 'confirm')), { className: 'danger confirm' })))),
    });
    flags.refresh();
    return h('section', { class: 'admin-section', id: 'review' }, h('h2', { text: 'Review' }),
      h('p', { class: 'sub', text: 'Members held for review, hidden from every ranking until you decide: Clear puts one back with its events; Confirm retracts its held events.' }),
      flags.els, msg);
  }

  // ---- boards ----

  // listed is a table of what path lists (its answer's field), a row a thing, with a note
  // when there are none or the list cannot be read. row(thing, del) makes a thing's row; del
  // (question, path, then) is a Delete button that asks twice, deletes path, tells then once
  // it is gone (deleted, or found so), and reads the list again. done is told the list each
  // time it is read.
  function listed({ id, path, params, field, heads, empty, row, done }) {
    const list = h('tbody', { id });
    const msg = h('p', { class: 'notice', hidden: true });
    const del = (question, target, then) => confirmButton('Delete', question, async () => {
      let gone = true;
      try {
        await call('DELETE', target);
      } catch (err) {
        gone = err.code === 'not_found';
        if (!gone) say(msg, err.message, 'error');
      }
      if (gone && then) then();
      refresh();
    });
    async function refresh() {
      let items;
      try {
        items = (await call('GET', path, { params }))[field];
      } catch (err) {
        say(msg, err.message, 'error');
        return;
      }
      say(msg, items.length ? '' : empty);
      list.replaceChildren(...items.map((it) => row(it, del)));
      if (done) done(items);
    }
    const table = h('table', { class: 'admin-table' }, h('thead', null, h('tr', null, heads.map((t) => h('th', { text: t })))), list);
    return { refresh, els: [msg, table] };
  }

  function boardsSection() {
    let form;
    const boards = listed({
      id: 'admin-boards', path: '/v1/boards', field: 'boards', heads: ['Board', 'Windows', 'Rules', 'Entries', ''],
      empty: 'No boards yet: create one below.',
      row: (b, del) => {
        const first = (b.windows || [])[0];
        const total = first && b.current && b.current[first] ? b.current[first].total : 0;
        return h('tr', { 'data-board': b.id },
          h('td', null, h('a', { href: '/boards/' + enc(b.id), text: b.id }), b.title ? h('small', { text: b.title }) : null),
          h('td', { text: (b.windows || []).map(windowLabel).join(', ') }),
          h('td', { text: describe(b) }),
          h('td', { class: 'num', text: num.format(total) + (total === 1 ? ' player' : ' players') }),
          h('td', null, h('div', { class: 'actions' }, h('button', { type: 'button', class: 'edit', text: 'Edit', onclick: () => form.edit(b) }),
            del(`Delete ${b.id} and all its events?`, '/v1/boards/' + enc(b.id), () => form.deleted(b.id)))));
      },
      done: (all) => { footEl.textContent = `${num.format(all.length)} ${all.length === 1 ? 'board' : 'boards'}`; },
    });
    form = boardForm(boards.refresh);
    boards.refresh();
    return h('section', { class: 'admin-section' }, h('h2', { text: 'Boards' }), boards.els, form.el);
  }

  // The fields of a board (docs/design.md, "Boards"): immutable ones are fixed once it exists.
  const FIELDS = [
    { name: 'id', label: 'Id', hint: 'a-z, 0-9, _ . - ; up to 64', create: true },
    { name: 'title', label: 'Title' },
    { name: 'windows', label: 'Windows', hint: 'all, hour … year, last7d, last24h; windows may be added, not removed', list: true },
    { name: 'order', label: 'Order', options: [['desc', 'highest wins'], ['asc', 'lowest wins']], create: true },
    { name: 'subscore', label: 'Subscore', options: [['', 'none'], ['asc', 'lowest breaks ties'], ['desc', 'highest breaks ties']], create: true,
      hint: 'a second number each event carries, ranking equal scores; fixed once the board exists' },
    { name: 'mode', label: 'Mode', options: [['sum', 'scores add up'], ['best', 'best score counts'], ['last', 'latest score counts']], create: true },
    { name: 'timezone', label: 'Time zone', hint: 'an IANA zone, e.g. Europe/Stockholm', create: true },
    { name: 'week_start', label: 'Week starts', options: ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'].map((d) => [d, d]), create: true },
    { name: 'late_limit', label: 'Late limit', hint: 'how old an event may be: 90s, 1h, 7d' },
    { name: 'keep', label: 'Closed periods kept', int: true },
    { name: 'min_value', label: 'Smallest value', int: true, hint: 'empty: no bound' },
    { name: 'max_value', label: 'Largest value', int: true, hint: 'empty: no bound' },
    { name: 'metadata', label: 'Metadata', hint: 'a JSON object; its "unit" is how scores show: "ms", "cs" or "s" as times (0:43.700), another ("pts") after them', json: true },
  ];

  // editForm builds a form that creates or edits a thing (a noun: 'board'): its heading, its
  // fields (ids prefix + name, 'board-week-start'), each with its hint and a place for its
  // error, its Save button, a button labelled fresh that empties it, and a line for its
  // outcome. reset(thing) shows a thing to edit, reset() a new one; current() is the thing it
  // edits (null: none); saved() is told of every change it makes or finds.
  function editForm({ prefix, noun, fields, fresh, reset, current, saved }) {
    const inputs = {};
    const errors = {};
    const rows = fields.map((f) => {
      const id = prefix + f.name.replace('_', '-');
      const input = f.options
        ? h('select', { id, name: f.name }, f.options.map(([v, t]) => h('option', { value: v, text: t })))
        : f.json ? h('textarea', { id, name: f.name, rows: 2, spellcheck: 'false' })
          : h('input', { id, name: f.name, type: 'text', inputmode: f.int ? 'numeric' : null, autocomplete: 'off', spellcheck: 'false' });
      inputs[f.name] = input;
      errors[f.name] = h('span', { class: 'field-error', id: id + '-error', role: 'alert', hidden: true });
      input.addEventListener('input', () => say(errors[f.name], ''));
      return h('div', { class: 'field', 'data-field': f.name }, h('label', { for: id, text: f.label }), input,
        f.hint ? h('small', { text: f.hint }) : null, errors[f.name]);
    });
    const heading = h('h3', { id: prefix + 'form-title' });
    const msg = h('p', { class: 'form-msg', id: prefix + 'form-msg', role: 'status', hidden: true });
    const submit = h('button', { type: 'submit', id: prefix + 'save' });
    const form = h('form', { class: 'board-form', id: prefix + 'form', novalidate: true }, heading, h('div', { class: 'fields' }, rows),
      h('div', { class: 'form-actions' }, submit, h('button', { type: 'button', text: fresh, onclick: () => reset() })), msg);
    // serverError shows the server's answer under the field it names ('boards[2]' is the
    // field boards), or in msg.
    const serverError = (err) => {
      const name = err.field && err.field.split(/[.[]/)[0];
      if (name && errors[name]) say(errors[name], err.message);
      else say(msg, err.message, 'error');
    };
    const Noun = noun[0].toUpperCase() + noun.slice(1);
    // asNew makes the form one that creates id, its fields as they stand: the thing it
    // edited is gone, and a Save must say that it creates.
    const asNew = (id) => {
      const values = Object.values(inputs).map((el) => [el, el.value]);
      reset();
      for (const [el, v] of values) el.value = v;
      inputs.id.value = id;
    };
    // deleted takes the form off id, deleted: it no longer says "Edit id", whose Save would
    // make id again, new and with the form's settings.
    const deleted = (id) => {
      if (current()?.id !== id) return;
      reset();
      say(msg, `Deleted ${noun} ${id}.`);
    };
    // onSave sends what spec reads from the form (null: it showed what is wrong) to PUT
    // base + its id, shows the server's refusal at its field, and gives done what was saved.
    // A PUT makes what is missing, so an edit first looks the thing up: deleted since the form
    // took it (in another tab, through the API), it is not made again unasked, nor is another
    // made under its id meanwhile changed in its stead.
    const onSave = (spec, base, done) => form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      say(msg, '');
      const s = spec();
      if (!s) return;
      const was = current();
      submit.disabled = true;
      let now, put;
      try {
        if (was) {
          now = await call('GET', base + enc(s.id)).catch((err) => { if (err.code === 'not_found') return null; throw err; });
          if (!now || now.created_at !== was.created_at) {
            if (now) {
              reset(now);
              say(msg, `${Noun} ${s.id} was deleted and made again since you opened it: the form now shows the new one.`, 'error');
            } else {
              asNew(s.id);
              say(msg, `${Noun} ${s.id} was deleted since you opened it: Create makes it again, with these settings.`, 'error');
            }
            saved();
            return;
          }
        }
        put = await call('PUT', base + enc(s.id), { body: s.body });
      } catch (err) {
        serverError(err);
        return;
      } finally {
        submit.disabled = false;
      }
      done(put);
      // Deleted between the look and the PUT, which made it again.
      if (now && put.created_at !== now.created_at) say(msg, `${Noun} ${s.id} was deleted as you saved it: this Save made it again, with these settings.`, 'error');
      saved();
    });
    return { form, heading, msg, submit, inputs, errors, onSave, deleted };
  }

  function boardForm(saved) {
    let editing = null;
    const { form, heading, msg, submit, inputs, errors, onSave, deleted } = editForm({ prefix: 'board-', noun: 'board', fields: FIELDS,
      fresh: 'New board', reset, current: () => editing, saved });

    function reset(b) {
      editing = b || null;
      heading.textContent = b ? `Edit ${b.id}` : 'New board';
      submit.textContent = b ? 'Save' : 'Create';
      for (const f of FIELDS) {
        const v = b ? b[f.name] : undefined;
        let text = '';
        if (f.list) text = (v || (b ? [] : ['all'])).join(', ');
        else if (f.json) text = v && Object.keys(v).length ? JSON.stringify(v) : '';
        else if (f.options) text = v || f.options[0][0];
        else if (f.name === 'timezone' && !b) text = 'UTC';
        else text = v == null ? '' : String(v);
        inputs[f.name].value = text;
        inputs[f.name].disabled = !!(b && f.create);
        say(errors[f.name], '');
      }
      say(msg, '');
    }

    // spec reads the form into a board spec, or shows what is wrong with it and returns null.
    function spec() {
      const out = {};
      let ok = true;
      const bad = (name, text) => { say(errors[name], text); ok = false; };
      for (const f of FIELDS) {
        if (f.name === 'id' || (editing && f.create)) continue;
        const raw = inputs[f.name].value.trim();
        if (f.list) {
          out[f.name] = raw.split(/[\s,]+/).filter(Boolean);
          if (!out[f.name].length) bad(f.name, 'Give at least one window.');
        } else if (f.int) {
          if (raw === '') {
            if (editing && editing[f.name] != null) bad(f.name, 'A bound once set cannot be removed here; give a value.');
            continue;
          }
          if (!/^-?\d+$/.test(raw)) bad(f.name, 'A whole number.');
          else out[f.name] = Number(raw);
        } else if (f.json) {
          if (raw === '') { out[f.name] = {}; continue; }
          try {
            const v = JSON.parse(raw);
            if (v === null || typeof v !== 'object' || Array.isArray(v)) bad(f.name, 'A JSON object, such as {"season": 3}.');
            else out[f.name] = v;
          } catch (err) {
            bad(f.name, 'Not JSON: ' + err.message);
          }
        } else if (raw !== '' || f.name === 'title') {
          out[f.name] = raw;
        }
      }
      const id = editing ? editing.id : inputs.id.value.trim();
      if (!/^[a-z0-9][a-z0-9_.-]{0,63}$/.test(id)) bad('id', 'Lower-case letters, digits, _ . - ; up to 64, starting with a letter or digit.');
      return ok ? { id, body: out } : null;
    }

    onSave(spec, '/v1/boards/', (b) => {
      const created = !editing;
      reset(b);
      say(msg, `${created ? 'Created' : 'Saved'} board ${b.id}.`);
    });
    reset();
    return { el: form, deleted, edit: (b) => { reset(b); form.scrollIntoView({ block: 'nearest' }); inputs.title.focus(); } };
  }

  // confirmButton asks for a second click within 5 s before it acts.
  function confirmButton(label, question, act) {
    let armed = 0;
    const b = h('button', { type: 'button', class: 'danger', text: label });
    b.addEventListener('click', async () => {
      if (!armed) {
        b.textContent = 'Click again to confirm';
        b.title = question;
        b.classList.add('armed');
        armed = setTimeout(() => { armed = 0; b.textContent = label; b.classList.remove('armed'); }, 5000);
        return;
      }
      clearTimeout(armed);
      armed = 0;
      b.disabled = true;
      await act();
    });
    return b;
  }

  // ---- webhooks ----

  // The fields of a hook (docs/api.md, "Webhooks"): its secret is never shown back, so an
  // edit that leaves it empty keeps it.
  const HOOK_FIELDS = [
    { name: 'id', label: 'Id', hint: 'a-z, 0-9, _ . - ; up to 64', create: true },
    { name: 'url', label: 'URL', hint: 'http or https: where each closed period\'s results are posted' },
    { name: 'secret', label: 'Secret', hint: '16–256 bytes; signs each delivery; never shown again (empty when editing: kept)' },
    { name: 'boards', label: 'Boards', hint: 'the boards it hears of; empty: every board', list: true },
  ];
  const DELIVERY_PAGE = 50;

  function hooksSection() {
    let form;
    const deliveries = deliveriesPanel();
    const hooks = listed({
      id: 'admin-hooks', path: '/v1/hooks', field: 'hooks', heads: ['Hook', 'URL', 'Boards', ''],
      empty: 'No webhooks: create one below to have each closed period\'s results posted to your server.',
      row: (hk, del) => h('tr', { 'data-hook': hk.id },
        h('td', null, h('b', { text: hk.id }), h('small', { text: 'since ' + when(hk.created_at) })),
        h('td', { class: 'url', text: hk.url }),
        h('td', { text: hk.boards.length ? hk.boards.join(', ') : 'every board' }),
        h('td', null, h('div', { class: 'actions' },
          h('button', { type: 'button', class: 'show-deliveries', text: 'Deliveries', onclick: () => deliveries.show(hk.id) }),
          h('button', { type: 'button', class: 'edit', text: 'Edit', onclick: () => form.edit(hk) }),
          del(`Delete webhook ${hk.id} and its deliveries?`, '/v1/hooks/' + enc(hk.id), () => { deliveries.close(hk.id); form.deleted(hk.id); })))),
    });
    form = hookForm(hooks.refresh);
    hooks.refresh();
    return h('section', { class: 'admin-section' }, h('h2', { text: 'Webhooks' }),
      h('p', { class: 'sub', text: 'Each closed period of a window with rewards is posted, signed, to every hook that hears of its board, until it answers 2xx.' }),
      hooks.els, deliveries.el, form.el);
  }

  function hookForm(saved) {
    let editing = null;
    const { form, heading, msg, submit, inputs, errors, onSave, deleted } = editForm({ prefix: 'hook-', noun: 'webhook', fields: HOOK_FIELDS,
      fresh: 'New webhook', reset, current: () => editing, saved });
    const generate = h('button', { type: 'button', id: 'hook-secret-new', text: 'Generate', onclick: () => {
      const bytes = crypto.getRandomValues(new Uint8Array(32));
      inputs.secret.value = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
      say(errors.secret, '');
    } });
    inputs.secret.after(generate);

    function reset(hk) {
      editing = hk || null;
      heading.textContent = hk ? `Edit webhook ${hk.id}` : 'New webhook';
      submit.textContent = hk ? 'Save' : 'Create';
      inputs.id.value = hk ? hk.id : '';
      inputs.id.disabled = !!hk;
      inputs.url.value = hk ? hk.url : '';
      inputs.secret.value = '';
      inputs.boards.value = hk ? hk.boards.join(', ') : '';
      for (const f of HOOK_FIELDS) say(errors[f.name], '');
      say(msg, '');
    }

    // spec reads the form into a hook spec, or shows what is wrong with it and returns null.
    function spec() {
      let ok = true;
      const bad = (name, text) => { say(errors[name], text); ok = false; };
      const id = editing ? editing.id : inputs.id.value.trim();
      if (!/^[a-z0-9][a-z0-9_.-]{0,63}$/.test(id)) bad('id', 'Lower-case letters, digits, _ . - ; up to 64, starting with a letter or digit.');
      const url = inputs.url.value.trim();
      if (!/^https?:\/\/[^/?#]/i.test(url)) bad('url', 'An http or https URL, such as https://game.example/laurel/results.');
      const body = { url, boards: inputs.boards.value.split(/[\s,]+/).filter(Boolean) };
      const secret = inputs.secret.value;
      if (secret !== '' || !editing) {
        const n = new TextEncoder().encode(secret).length;
        if (n < 16 || n > 256) bad('secret', `16 to 256 bytes (this is ${n}); Generate makes one.`);
        body.secret = secret;
      }
      return ok ? { id, body } : null;
    }

    onSave(spec, '/v1/hooks/', (hk) => {
      const created = !editing;
      reset(hk);
      say(msg, created ? `Created webhook ${hk.id}: give its secret to the receiver now, it is not shown again.` : `Saved webhook ${hk.id}.`);
    });
    reset();
    return { el: form, deleted, edit: (hk) => { reset(hk); form.scrollIntoView({ block: 'nearest' }); inputs.url.focus(); } };
  }

  // deliveriesPanel shows one hook's deliveries, newest period last, a state at a time, each
  // with its body on demand and a replay.
  function deliveriesPanel() {
    const title = h('h3', { id: 'deliveries-title' });
    const state = h('select', { id: 'delivery-state', 'aria-label': 'State' },
      [['', 'every state'], ['pending', 'pending'], ['failed', 'failed'], ['delivered', 'delivered']].map(([v, t]) => h('option', { value: v, text: t })));
    const rows = h('tbody', { id: 'admin-deliveries' });
    const msg = h('p', { class: 'notice', id: 'deliveries-msg', hidden: true });
    const more = h('button', { type: 'button', id: 'deliveries-more', text: 'More', hidden: true });
    const close = h('button', { type: 'button', text: 'Close', onclick: () => show(null) });
    const el = h('div', { class: 'board-form deliveries', id: 'hook-deliveries', hidden: true },
      h('div', { class: 'member-head' }, title, h('div', { class: 'actions' }, state, close)), msg,
      h('table', { class: 'admin-table' },
        h('thead', null, h('tr', null, ['Period', 'State', 'Attempts', 'Last answer', ''].map((t) => h('th', { text: t })))), rows),
      more);
    let hook = null;
    let last = '';

    async function show(id) {
      hook = id;
      el.hidden = !id;
      if (!id) return;
      title.textContent = `Deliveries of ${id}`;
      rows.replaceChildren();
      last = '';
      await page();
      el.scrollIntoView({ block: 'nearest' });
    }

    // page reads the next page of the hook's deliveries after the last one shown.
    async function page() {
      const id = hook;
      let ds;
      try {
        ({ deliveries: ds } = await call('GET', `/v1/hooks/${enc(id)}/deliveries`, { params: { state: state.value, after: last, limit: DELIVERY_PAGE } }));
      } catch (err) {
        say(msg, err.message);
        return;
      }
      if (id !== hook) return; // another hook was chosen meanwhile
      say(msg, last || ds.length ? '' : state.value ? `None ${state.value}.`
        : 'No deliveries yet: a hook is told of the periods that close after it is made.');
      rows.append(...ds.map(row));
      if (ds.length) last = ds[ds.length - 1].id;
      more.hidden = ds.length < DELIVERY_PAGE;
    }

    function row(d) {
      const tr = h('tr', { 'data-delivery': d.id, 'data-state': d.state },
        h('td', null, h('b', { text: `${d.board} · ${d.window}` }), // a closed period: not "This hour"
          h('small', { text: `${d.period}${d.parts > 1 ? ` · part ${d.part} of ${d.parts}` : ''}` })),
        h('td', null, h('span', { class: 'badge state', text: d.state }),
          h('small', { text: d.state === 'pending' ? 'next ' + when(d.next_attempt_at) : d.delivered_at ? when(d.delivered_at) : 'made ' + when(d.created_at) })),
        h('td', { class: 'num', text: num.format(d.attempts) }),
        h('td', null, d.last_status ? h('b', { text: String(d.last_status) }) : null, d.last_error ? h('small', { class: 'last-error', text: d.last_error }) : null),
        h('td', null, h('div', { class: 'actions' },
          h('button', { type: 'button', class: 'body', text: 'Body', onclick: () => body(d, tr) }),
          h('button', { type: 'button', class: 'replay', text: 'Replay', onclick: () => replay(d, tr) }))));
      return tr;
    }

    // body shows, under the delivery's row, what it posts (or hides it again).
    async function body(d, tr) {
      const open = tr.nextElementSibling && tr.nextElementSibling.classList.contains('delivery-body') ? tr.nextElementSibling : null;
      if (open) return open.remove();
      let full;
      try {
        full = await call('GET', `/v1/hooks/${enc(d.hook)}/deliveries/${enc(d.id)}`);
      } catch (err) {
        say(msg, err.message);
        return;
      }
      tr.after(h('tr', { class: 'delivery-body' }, h('td', { colspan: 5 }, h('pre', { class: 'meta', text: JSON.stringify(full.body, null, 2) }))));
    }

    async function replay(d, tr) {
      let again;
      try {
        again = await call('POST', `/v1/hooks/${enc(d.hook)}/deliveries/${enc(d.id)}/replay`);
      } catch (err) {
        say(msg, err.message);
        return;
      }
      const open = tr.nextElementSibling && tr.nextElementSibling.classList.contains('delivery-body');
      if (open) tr.nextElementSibling.remove();
      tr.replaceWith(row(again));
      say(msg, `Delivery ${d.id} is pending again.`);
    }

    state.addEventListener('change', () => show(hook));
    more.addEventListener('click', page);
    return { el, show, close: (id) => { if (hook === id) show(null); } };
  }

  const when = (s) => (s ? new Date(s).toLocaleString() : '–');

  // ---- members ----

  function membersSection() {
    const input = h('input', { id: 'member-q', type: 'search', placeholder: 'Member id', autocomplete: 'off', spellcheck: 'false', 'aria-label': 'Member id' });
    const out = h('div', { id: 'member-out' });
    const form = h('form', { class: 'search', id: 'member-search', role: 'search' }, input, h('button', { type: 'submit', text: 'Look up' }));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const member = input.value.trim();
      if (member) show(member);
    });

    // show reads the member's profile and its entry in every window of every board.
    async function show(member, note) {
      const card = out.querySelector('.member-card');
      if (!card || card.dataset.member !== member) out.replaceChildren(h('p', { class: 'muted', text: 'Looking…' }));
      let profile = null, boards;
      try {
        profile = await call('GET', '/v1/members/' + enc(member)).catch((err) => { if (err.code === 'not_found') return null; throw err; });
        ({ boards } = await call('GET', '/v1/boards'));
      } catch (err) {
        out.replaceChildren(h('p', { class: 'notice', text: err.message }));
        return;
      }
      const standings = await Promise.all(boards.map(async (b) => ({
        board: b,
        entries: await Promise.all((b.windows || []).map((w) => call('GET', `/v1/boards/${enc(b.id)}/members/${enc(member)}`, { params: { window: w } })
          .then((r) => r.entry, (err) => (err.code === 'not_found' ? null : { error: err.message })))),
      })));
      const found = standings.filter((s) => s.entries.some(Boolean));
      const hidden = !!(profile && profile.hidden);
      const msg = h('p', { class: 'form-msg', id: 'member-msg', role: 'status', hidden: !note, text: note });
      const act = async (method, path, done) => {
        try {
          await call(method, path);
        } catch (err) {
          say(msg, err.message, 'error');
          return;
        }
        show(member, done);
      };
      out.replaceChildren(h('div', { class: 'member-card', 'data-member': member, 'data-hidden': String(hidden) },
        h('div', { class: 'member-head' },
          h('div', null, h('h3', { text: (profile && profile.name) || member }), h('p', { class: 'id', text: '@' + member }),
            hidden ? h('span', { class: 'badge', text: 'hidden from every ranking' }) : null),
          h('div', { class: 'actions' },
            hidden
              ? h('button', { type: 'button', id: 'member-unhide', text: 'Unhide', onclick: () => act('POST', `/v1/members/${enc(member)}/unhide`, 'Back in every ranking.') })
              : h('button', { type: 'button', id: 'member-hide', text: 'Hide', onclick: () => act('POST', `/v1/members/${enc(member)}/hide`, 'Hidden from every ranking; its data is kept.') }),
            Object.assign(confirmButton('Delete', `Erase ${member} everywhere: events, entries, history, profile?`,
              () => act('DELETE', '/v1/members/' + enc(member), 'Erased everywhere.')), { id: 'member-delete' }))),
        profile && profile.metadata && Object.keys(profile.metadata).length ? h('pre', { class: 'meta', text: JSON.stringify(profile.metadata, null, 2) }) : null,
        found.length
          ? h('table', { class: 'admin-table', id: 'member-boards' },
            h('thead', null, h('tr', null, h('th', { text: 'Board' }), h('th', { text: 'Standing per window' }))),
            h('tbody', null, found.map((s) => h('tr', { 'data-board': s.board.id },
              h('td', null, h('a', { href: `/boards/${enc(s.board.id)}?member=${enc(member)}`, text: s.board.title || s.board.id })),
              h('td', null, h('ul', { class: 'standings' }, s.board.windows.map((w, i) => {
                const e = s.entries[i];
                return h('li', { 'data-window': w }, h('span', { text: windowLabel(w) }),
                  h('b', { text: !e ? '–' : e.error ? e.error : `#${num.format(e.rank)} · ${scoreText(s.board, e.score)}` }));
              })))))))
          : h('p', { class: 'muted', id: 'member-none', text: hidden ? 'Hidden: on no ranking.' : 'On no board.' }),
        msg));
    }
    return h('section', { class: 'admin-section' }, h('h2', { text: 'Members' }),
      h('p', { class: 'sub', text: 'Look a member up across every board; hide a cheat under review, or erase a member for good.' }), form, out);
  }
})();
