// laurel's own web page: the list of boards, and one board live. It reads the public API only
// (docs/api.md), with the key of the page's ?key= when there is one. No framework, no build step.
'use strict';
(() => {
  const { num, enc, h, svg, request, setStatus, say, windowLabel, describe, scoreText } = window.laurelUI;
  const query = new URLSearchParams(location.search);
  const key = query.get('key') || '';
  const app = document.getElementById('app');
  const footEl = document.getElementById('foot');
  const reduceMotion = matchMedia('(prefers-reduced-motion: reduce)').matches;
  const LIMITS = [10, 25, 50, 100]; // the stream serves at most 100

  // api GETs a path of the API with the page's key.
  const api = (path, params) => request('GET', path, { params, key });

  // withKey adds the page's key to a URL of this server.
  function withKey(path, params) {
    const u = new URL(path, location.origin);
    for (const [k, v] of Object.entries(params || {})) u.searchParams.set(k, v);
    if (key) u.searchParams.set('key', key);
    return u.pathname + u.search;
  }

  function explain(err) {
    if (err.code === 'unauthenticated') {
      return key ? 'The server does not know the key of this page (?key=…): it may be mistyped, revoked or expired.'
        : 'This server needs a key to read: open this page with ?key=<read key>.';
    }
    if (err.code === 'permission_denied') return 'The key of this page cannot read this.';
    if (err.code === 'unavailable') return 'The server cannot answer right now; this page tries again by itself.';
    return err.message || String(err);
  }

  // failed is the status line of a read that failed: offline only when nothing answered.
  const failed = (err) => setStatus('error', err.status === 0 ? 'Offline' : 'Error');

  // hue gives each member a stable colour.
  function hue(s) {
    let x = 2166136261;
    for (let i = 0; i < s.length; i++) x = Math.imul(x ^ s.charCodeAt(i), 16777619);
    return (x >>> 0) % 360;
  }
  function initials(name) {
    const parts = name.trim().split(/[\s_.-]+/).filter(Boolean);
    const last = parts[parts.length - 1] || '';
    if (parts.length > 1 && /^\d+$/.test(last)) return (Array.from(parts[0])[0] + last.slice(0, 2)).toUpperCase(); // Player 12: P12
    const chars = parts.length > 1 ? [parts[0], last].map((p) => Array.from(p)[0]) : Array.from(parts[0] || '?').slice(0, 2);
    return chars.join('').toUpperCase();
  }
  function avatar(member, name) {
    const el = h('span', { class: 'avatar', 'aria-hidden': 'true', text: initials(name || member) });
    el.style.setProperty('--hue', hue(member));
    return el;
  }

  const calendar = (w) => ['hour', 'day', 'week', 'month', 'year'].includes(w);

  // periodLabel names a calendar period by its id (docs/design.md: 2026-11-22T10, 2026-11-16, 2026-11, 2026).
  function periodLabel(w, id) {
    const m = /^(\d{4})(?:-(\d{2}))?(?:-(\d{2}))?(?:T(\d{2}))?$/.exec(id || '');
    if (!m) return id || '';
    const d = new Date(Date.UTC(+m[1], (+m[2] || 1) - 1, +m[3] || 1, +m[4] || 0));
    const f = (o) => new Intl.DateTimeFormat(undefined, { timeZone: 'UTC', ...o }).format(d);
    switch (w) {
      case 'hour': return f({ day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit' });
      case 'day': return f({ weekday: 'short', day: 'numeric', month: 'short', year: 'numeric' });
      case 'week': return 'Week of ' + f({ day: 'numeric', month: 'short', year: 'numeric' });
      case 'month': return f({ month: 'long', year: 'numeric' });
      default: return id;
    }
  }

  // remaining says how long until a period ends: "Ends in 2 d 4 h", "Ends in 3 min 5 s".
  function remaining(ms) {
    if (ms <= 0) return 'Ended: late scores still count';
    const s = Math.floor(ms / 1000), d = Math.floor(s / 86400), hr = Math.floor(s / 3600) % 24;
    const min = Math.floor(s / 60) % 60, sec = s % 60;
    if (d > 0) return `Ends in ${d} d ${hr} h`;
    if (hr > 0) return `Ends in ${hr} h ${min} min`;
    return `Ends in ${min} min ${sec} s`;
  }

  // ---- the list of boards ----

  async function boardsPage() {
    document.title = 'Boards · laurel';
    const cards = h('div', { class: 'cards', id: 'boards' });
    const notice = h('p', { class: 'notice', id: 'notice', hidden: true });
    app.replaceChildren(h('section', { class: 'intro' }, h('h1', { text: 'Leaderboards' }), h('p', { class: 'sub', text: 'Pick a board to watch it live.' })), notice, cards);

    // listBoards reads every board; a member token may not list them, but names its own.
    async function listBoards() {
      try {
        return (await api('/v1/boards')).boards;
      } catch (err) {
        if (err.code !== 'permission_denied') throw err;
        const me = await api('/v1/whoami').catch(() => ({}));
        if (!me.boards) throw err;
        const mine = await Promise.all(me.boards.map((b) => api('/v1/boards/' + enc(b)).catch(() => null)));
        return mine.filter(Boolean);
      }
    }

    async function refresh() {
      try {
        const boards = await listBoards();
        notice.hidden = true;
        cards.replaceChildren(...boards.map(card));
        if (!boards.length) {
          notice.hidden = false;
          notice.textContent = 'No boards yet. Create one with PUT /v1/boards/{board}.';
        }
        setStatus('idle');
        footEl.textContent = `${boards.length} ${boards.length === 1 ? 'board' : 'boards'}`;
      } catch (err) {
        notice.hidden = false;
        notice.textContent = explain(err);
        failed(err);
      }
      app.setAttribute('aria-busy', 'false');
    }
    function card(b) {
      const wins = (b.windows || []).map((w) => {
        const total = b.current && b.current[w] ? b.current[w].total : 0;
        return h('li', null, h('span', { text: windowLabel(w) }), h('b', { text: num.format(total) }),
          h('span', { text: total === 1 ? 'player' : 'players' }));
      });
      const top = h('ol', { class: 'preview', 'aria-label': 'Top 3, ' + windowLabel((b.windows || [])[0] || 'all') });
      preview(b, top);
      return h('a', { class: 'card', href: withKey('/boards/' + enc(b.id)), 'data-board': b.id },
        h('h2', { text: b.title || b.id }),
        h('p', { class: 'sub', text: (b.title ? b.id + ' · ' : '') + describe(b) }),
        top,
        h('ul', { class: 'wins', 'aria-label': 'Players per window' }, wins));
    }
    // preview fills list with the board's top 3 in its first window.
    async function preview(b, list) {
      const w = (b.windows || [])[0];
      if (!w) return;
      try {
        const page = await api('/v1/boards/' + enc(b.id) + '/entries', { window: w, limit: 3 });
        list.replaceChildren(...(page.entries || []).map((e) => h('li', { 'data-member': e.member },
          h('span', { class: 'r', text: '#' + e.rank }), h('span', { class: 'n', text: e.name || e.member }),
          h('b', { text: scoreText(b, e.score) }))));
      } catch (err) {
        list.replaceChildren(); // the card still leads to the board
      }
    }
    await refresh();
    setInterval(refresh, 15000);
  }

  // ---- one board ----

  function boardPage(board) {
    const st = {
      meta: null,
      window: query.get('window') || '',
      period: query.get('period') || '', // '' is the current period: live
      offset: Math.max(0, parseInt(query.get('offset'), 10) || 0),
      limit: LIMITS.includes(+query.get('limit')) ? +query.get('limit') : 25,
      member: query.get('member') || '', // the selected member
      around: !!query.get('member'), // showing the page around the selected member
      total: 0,
      shown: [], // entries of the page on screen
      prev: new Map(), // member → rank on the previous page shown
      moves: new Map(), // member → {dir, by, at}
      seq: 0, // bumped by every new view; late answers of old views are dropped
      es: null,
      timer: 0,
      retry: 0,
      metaFor: '', // the current period the board was last read for
      endsAt: 0, // when the current calendar period shown ends (unix ms); 0: none to count down
      meEntry: null, // the selected member's entry, as its panel read it last
    };
    const base = '/v1/boards/' + enc(board);

    const title = h('h1', { id: 'title', text: board });
    const sub = h('p', { class: 'sub', id: 'sub' });
    const countdown = h('p', { class: 'countdown', id: 'countdown', hidden: true, 'aria-live': 'off' });
    const windows = h('nav', { class: 'tabs', id: 'windows', 'aria-label': 'Window' });
    const periodSel = h('select', { id: 'period', 'aria-label': 'Period' });
    const periodBox = h('label', { class: 'period', hidden: true }, periodSel);
    const q = h('input', { id: 'q', type: 'search', placeholder: 'Find a player…', autocomplete: 'off', spellcheck: 'false', 'aria-label': 'Member id or name' });
    const search = h('form', { id: 'search', class: 'search', role: 'search' }, q, h('button', { type: 'submit', text: 'Find' }));
    const searchMsg = h('p', { class: 'search-msg', id: 'search-msg', hidden: true });
    const notice = h('p', { class: 'notice', id: 'notice', hidden: true });
    const rows = h('ol', { class: 'rows', id: 'rows' });
    const pinned = h('ol', { class: 'pinned', id: 'pinned', hidden: true, 'aria-label': 'Selected player' });
    // Below the first page (found a player, paged down), the leaders are a click away.
    const topBtn = h('button', { type: 'button', id: 'top', text: '↑ Top of the board' });
    const toTop = h('div', { class: 'to-top', hidden: true }, topBtn);
    const prevBtn = h('button', { type: 'button', id: 'prev', text: '← Prev' });
    const nextBtn = h('button', { type: 'button', id: 'next', text: 'Next →' });
    const range = h('span', { class: 'range', id: 'range' });
    const limitSel = h('select', { id: 'limit', 'aria-label': 'Rows per page' },
      LIMITS.map((n) => h('option', { value: n, text: `${n} / page`, selected: n === st.limit })));
    const pager = h('div', { class: 'pager', hidden: true }, prevBtn, range, nextBtn, limitSel); // shown once there is a page
    const controls = h('div', { class: 'controls' }, windows, periodBox, search);
    const panel = h('aside', { class: 'panel', id: 'member', hidden: true });
    const results = h('section', { class: 'results', id: 'results', hidden: true, 'aria-label': "Last period's results" });

    app.replaceChildren(
      h('section', { class: 'board' },
        h('div', { class: 'head' }, h('div', null, title, sub), countdown),
        controls,
        searchMsg,
        h('div', { class: 'layout' },
          h('div', { class: 'main' }, notice, toTop, rows, pinned, pager, results),
          panel)));

    // ---- controls ----

    periodSel.addEventListener('change', () => {
      st.period = periodSel.value;
      st.offset = 0;
      start();
      refreshPanel();
    });
    limitSel.addEventListener('change', () => {
      st.limit = +limitSel.value;
      if (!st.around) st.offset = Math.floor(st.offset / st.limit) * st.limit;
      start();
    });
    prevBtn.addEventListener('click', () => { st.around = false; st.offset = Math.max(0, st.offset - st.limit); start(); });
    nextBtn.addEventListener('click', () => { st.around = false; st.offset += st.limit; start(); });
    topBtn.addEventListener('click', () => {
      say(searchMsg, '');
      st.around = false; // the player found stays selected, pinned under the top
      st.offset = 0;
      start();
    });
    search.addEventListener('submit', (ev) => {
      ev.preventDefault();
      find(q.value.trim());
    });
    addEventListener('keydown', (ev) => {
      if (ev.key === '/' && document.activeElement !== q && !(ev.target instanceof HTMLInputElement)) {
        ev.preventDefault();
        q.focus();
      } else if (ev.key === 'Escape' && st.member) {
        select('');
      }
    });

    function renderWindows() {
      windows.replaceChildren(...st.meta.windows.map((w) => h('button', {
        type: 'button', 'data-window': w, 'aria-pressed': String(w === st.window), text: windowLabel(w),
        onclick: () => {
          if (w === st.window) return;
          st.window = w;
          st.period = '';
          st.offset = 0;
          start();
          loadPeriods();
          refreshPanel();
        },
      })));
    }

    async function loadPeriods() {
      const w = st.window;
      periodBox.hidden = true;
      if (!calendar(w)) return;
      let periods = [];
      try {
        ({ periods } = await api(base + '/periods', { window: w }));
      } catch (err) {
        return; // no periods to pick: the current one still shows
      }
      if (w !== st.window) return;
      loadResults(w, periods.find((p) => p.closed));
      // A period that ended but takes late events closes late_limit after its end: look again
      // then, for its results and final ranks.
      clearTimeout(st.periodsTimer);
      const closes = periods.filter((p) => !p.closed && p.end && Date.parse(p.end) <= Date.now())
        .map((p) => Date.parse(p.end) + lateLimitMs(st.meta.late_limit));
      if (closes.length) st.periodsTimer = setTimeout(loadPeriods, Math.min(Math.max(0, Math.min(...closes) - Date.now()) + 1500, 2 ** 31 - 1));
      const cur = currentPeriod();
      const past = periods.filter((p) => p.id && p.id !== cur);
      if (!past.length) return;
      periodSel.replaceChildren(
        h('option', { value: '', text: `${periodLabel(w, cur)} · live` }),
        ...past.map((p) => h('option', { value: p.id, text: `${periodLabel(w, p.id)} · ${num.format(p.total || 0)}` })));
      if (st.period && !past.some((p) => p.id === st.period)) {
        periodSel.append(h('option', { value: st.period, text: periodLabel(w, st.period) }));
      }
      periodSel.value = st.period;
      periodBox.hidden = false;
    }

    // loadResults shows what the last closed period of window w earned, when the board rewards
    // its ranks: the first ten rewarded, each with its reward (and its cohort, on a board of
    // cohorts).
    async function loadResults(w, last) {
      results.hidden = true;
      const rewarded = (st.meta.rewards || []).some((r) => r.window === w);
      if (!rewarded || !last) return;
      let res;
      try {
        res = await api(base + '/periods/' + enc(last.id) + '/results', { window: w, limit: 10 });
      } catch (err) {
        return; // the board still shows; results are extra
      }
      if (w !== st.window) return;
      const reward = (r) => Object.entries(r || {}).map(([k, v]) => `${k}: ${typeof v === 'object' ? JSON.stringify(v) : v}`).join(', ') || '✓';
      results.replaceChildren(
        h('h3', { text: `${periodLabel(w, last.id)} · results` }),
        h('p', { class: 'muted', text: `${num.format(res.rewarded)} of ${num.format(res.total)} rewarded` }),
        h('ol', { class: 'result-list' }, res.results.map((r) => h('li', { 'data-member': r.member },
          h('span', { class: 'rank', text: '#' + r.rank }),
          h('span', { class: 'who', text: r.name || r.member }),
          r.cohort ? h('small', { class: 'cohort', text: r.cohort }) : null,
          h('span', { class: 'score', text: scoreText(st.meta, r.score) }),
          subscoreIn(h('small', { class: 'subscore' }), r),
          h('span', { class: 'reward', text: reward(r.reward) })))));
      results.hidden = false;
    }

    // lateLimitMs reads a board's late_limit (90s, 30m, 1h, 7d) in milliseconds.
    function lateLimitMs(d) {
      const m = /^(\d+)(ns|us|ms|s|m|h|d)$/.exec(d || '');
      return m ? +m[1] * { ns: 1e-6, us: 1e-3, ms: 1, s: 1e3, m: 6e4, h: 36e5, d: 864e5 }[m[2]] : 0;
    }

    function currentPeriod() {
      const c = st.meta && st.meta.current && st.meta.current[st.window];
      return (c && c.period && c.period.id) || '';
    }

    function syncURL() {
      const u = new URLSearchParams();
      if (st.window !== st.meta.windows[0]) u.set('window', st.window);
      if (st.period) u.set('period', st.period);
      if (!st.around && st.offset) u.set('offset', st.offset);
      if (st.limit !== 25) u.set('limit', st.limit);
      if (st.member) u.set('member', st.member);
      if (key) u.set('key', key);
      const s = u.toString();
      history.replaceState(null, '', location.pathname + (s ? '?' + s : ''));
    }

    // ---- reading the board ----

    function stop() {
      if (st.es) st.es.close();
      st.es = null;
      clearTimeout(st.timer);
      clearInterval(st.timer);
      st.timer = 0;
    }

    // start shows the view the state names: the current first page through the stream, any
    // other page of the current period by polling, a past period once.
    function start() {
      stop();
      const my = ++st.seq;
      st.prev = new Map();
      st.moves = new Map();
      st.retry = 0;
      syncURL();
      renderWindows();
      limitSel.value = String(st.limit);
      rows.dataset.view = '';
      if (st.around && st.member) {
        read(my);
        if (!st.period) st.timer = setInterval(() => read(my), 5000);
      } else if (!st.period && st.offset === 0) {
        stream(my);
      } else {
        read(my);
        if (!st.period) st.timer = setInterval(() => read(my), 5000);
      }
    }

    function stream(my) {
      setStatus('connecting', 'Connecting…');
      const es = new EventSource(withKey(base + '/stream', { window: st.window, limit: st.limit }));
      st.es = es;
      es.addEventListener('page', (ev) => {
        if (my !== st.seq) return;
        let page;
        try { page = JSON.parse(ev.data); } catch (err) { return; }
        st.retry = 0;
        show(page);
        setStatus('live', 'Live');
      });
      es.addEventListener('open', () => { if (my === st.seq) setStatus('live', 'Live'); });
      es.addEventListener('error', (ev) => {
        if (my !== st.seq) return;
        if (ev.data) {
          // The server's own "error" event: the board or its window is gone.
          let gone;
          try { gone = JSON.parse(ev.data).error; } catch (err) { /* keep going */ }
          if (gone && gone.code === 'not_found') {
            // Deleted while watched: nothing to reconnect to.
            es.close();
            stop();
            say(notice, `There is no board “${board}” any more. `);
            notice.append(h('a', { href: withKey('/'), text: 'See all boards' }));
            setStatus('idle');
            return;
          }
          if (gone) say(notice, explain(gone));
        }
        if (es.readyState !== EventSource.CLOSED) {
          setStatus('connecting', 'Reconnecting…');
          return;
        }
        // Refused (a key, a limit, an old server): read once to show why, and try again later.
        es.close();
        read(my, true);
        st.timer = setTimeout(() => { if (my === st.seq) stream(my); }, Math.min(30000, 1000 * 2 ** st.retry++));
      });
    }

    async function read(my, fallback) {
      const params = { window: st.window, period: st.period };
      let page;
      try {
        if (st.around && st.member) {
          params.radius = Math.max(1, Math.ceil((st.limit - 1) / 2)); // then cut to the page's size
          page = await api(base + '/members/' + enc(st.member) + '/around', params);
        } else {
          page = await api(base + '/entries', { ...params, offset: st.offset, limit: st.limit });
        }
      } catch (err) {
        if (my !== st.seq) return;
        if (err.status === 404 && st.around && err.code === 'not_found') {
          // Not on the board here: show the top instead.
          say(searchMsg, `No member “${st.member}” on this board ${st.period ? 'in this period' : 'in this window'} (a name is found among the players shown; elsewhere, give the member's id).`);
          st.around = false;
          st.offset = 0;
          select('');
          start();
          return;
        }
        say(notice, explain(err));
        failed(err);
        return;
      }
      if (my !== st.seq) return;
      if (st.around && page.entries && page.entries.length > st.limit) {
        // An even page size: the member's row, then one row fewer after it than before.
        const at = page.entries.findIndex((e) => e.member === st.member);
        const from = Math.max(0, Math.min(at - Math.floor(st.limit / 2), page.entries.length - st.limit));
        page.entries = page.entries.slice(from, from + st.limit);
      }
      const entries = page.entries || [];
      if (st.around && !st.period && !fallback && entries.some((e) => e.member === st.member && e.rank <= st.limit)) {
        // The member is on the first page: watch that one live, the member highlighted, the
        // leader on top (the page around the member may start below rank 1).
        st.around = false;
        st.offset = 0;
        start();
        return;
      }
      show(page);
      if (st.period) setStatus('static', closedText(page));
      else setStatus(fallback ? 'connecting' : 'live', fallback ? 'Reconnecting…' : 'Live');
    }

    // tick shows the time left in the current calendar period, to the second in its last hour.
    function tick() {
      if (!st.endsAt) {
        countdown.hidden = true;
        return;
      }
      countdown.hidden = false;
      countdown.textContent = remaining(st.endsAt - Date.now());
    }
    setInterval(tick, 1000);

    function closedText(page) {
      return page.period && page.period.closed ? 'Final' : 'Past period';
    }

    // show puts a Page on screen.
    function show(page) {
      const entries = page.entries || [];
      if (st.around && entries.length) st.offset = entries[0].rank - 1;
      st.total = page.total || 0;
      say(notice, entries.length ? '' : (st.offset > 0 && st.total ? 'No one this far down.' : 'No scores here yet.'));
      moves(entries);
      rows.classList.toggle('still', !entries.some((e) => st.moves.has(e.member)));
      renderRows(entries);
      st.shown = entries;
      renderPinned();
      renderPager();
      toTop.hidden = st.offset === 0;
      renderFoot(page);
      const p = page.period || {};
      st.shownPeriod = p;
      st.endsAt = !st.period && p.id && p.id !== 'all' && p.end ? Date.parse(p.end) : 0;
      tick();
      rows.dataset.view = [st.window, st.period, st.offset, st.limit, st.around ? st.member : ''].join('|');
      app.setAttribute('aria-busy', 'false');
      const pid = page.period && page.period.id;
      if (!st.period && pid && pid !== currentPeriod() && pid !== st.metaFor) {
        st.metaFor = pid;
        loadMeta(false); // a new period began: the picker's list changed
      }
      const me = entries.find((e) => e.member === st.member);
      if (me) updatePanel(me);
      else followMember();
    }

    // followMember reads the selected member's entry again when a live page changed without
    // it, at most once a second (and once more after the last change), so that its panel and
    // pinned row follow the board rather than show where it stood when last on the page.
    let followAt = 0;
    let followTimer = 0;
    function followMember() {
      if (!st.member || st.period || followTimer) return;
      followTimer = setTimeout(async () => {
        followTimer = 0;
        followAt = Date.now();
        const member = st.member;
        const my = panelSeq;
        if (!member || st.period) return;
        try {
          const r = await api(base + '/members/' + enc(member), { window: st.window });
          if (my === panelSeq) updatePanel(r.entry, r.total);
        } catch (err) {
          if (my !== panelSeq || err.code !== 'not_found') return;
          st.meEntry = null; // off the board now (a new period, say)
          renderPinned();
          panelParts.stats.replaceChildren(h('p', { class: 'muted', text: 'Not on the board here.' }));
        }
      }, Math.max(0, followAt + 1000 - Date.now()));
    }

    // moves compares ranks with the page shown before. A move stays visible for a while when
    // the next pages leave the rank alone.
    function moves(entries) {
      const now = Date.now();
      const had = st.prev.size > 0;
      for (const e of entries) {
        const old = st.prev.get(e.member);
        if (old !== undefined && old !== e.rank) {
          st.moves.set(e.member, { dir: e.rank < old ? 'up' : 'down', by: Math.abs(old - e.rank), at: now });
        } else if (old === undefined && had) {
          // New on this page: at the top it can only have come from below.
          st.moves.set(e.member, { dir: st.offset === 0 ? 'up' : 'new', by: 0, at: now });
        } else {
          const m = st.moves.get(e.member);
          if (m && now - m.at > 10000) st.moves.delete(e.member);
        }
      }
      st.prev = new Map(entries.map((e) => [e.member, e.rank]));
    }

    const rowOf = new Map(); // member → its <li>, reused so that rows can glide

    function renderRows(entries) {
      // FLIP: First, remember where every row is; Last, move the rows; Invert, put each back
      // where it was with a transform; Play, let the transform go to zero.
      const first = new Map();
      for (const [m, el] of rowOf) first.set(m, el.getBoundingClientRect().top);
      const keep = new Set();
      entries.forEach((e, i) => {
        let el = rowOf.get(e.member);
        if (!el) {
          el = makeRow(e.member);
          rowOf.set(e.member, el);
        }
        fillRow(el, e);
        keep.add(e.member);
        const at = rows.children[i];
        if (at !== el) rows.insertBefore(el, at || null);
      });
      for (const [m, el] of rowOf) {
        if (!keep.has(m)) {
          el.remove();
          rowOf.delete(m);
        }
      }
      if (reduceMotion) return;
      const moved = [];
      let entering = 0;
      for (const el of rows.children) {
        const top = first.get(el.dataset.member);
        if (top === undefined) {
          el.style.animationDelay = Math.min(entering++ * 30, 600) + 'ms'; // a cascade
          el.classList.add('enter');
          continue;
        }
        const dy = top - el.getBoundingClientRect().top;
        if (Math.abs(dy) < 1) continue;
        el.style.transition = 'none';
        el.style.transform = `translateY(${dy}px)`;
        el.classList.toggle('rising', dy > 0);
        moved.push(el);
      }
      if (!moved.length) return;
      void rows.offsetHeight; // apply the inverted positions before playing
      for (const el of moved) {
        el.style.transition = '';
        el.style.transform = '';
      }
    }

    function makeRow(member) {
      const el = h('li', { class: 'row', tabindex: '0', 'data-member': member },
        h('span', { class: 'rank' }),
        h('span', { class: 'move' }),
        h('span', { class: 'slot' }),
        h('span', { class: 'who' }, h('span', { class: 'name' }), h('span', { class: 'id' }), h('span', { class: 'tag' })),
        h('span', { class: 'scores' }, h('span', { class: 'score' }), h('small', { class: 'subscore' })));
      el.addEventListener('click', () => select(st.member === member ? '' : member));
      el.addEventListener('keydown', (ev) => { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); el.click(); } });
      el.addEventListener('transitionend', (ev) => { if (ev.target === el && ev.propertyName === 'transform') el.classList.remove('rising'); });
      el.addEventListener('animationend', (ev) => {
        if (ev.target === el) el.classList.remove('enter');
        if (ev.animationName === 'bump') el.classList.remove('bump');
      });
      return el;
    }

    // tagText is how a row shows the tag of the event that made its score: a string or number
    // as it is, an object's fields as "car kart-3 · lap 4", anything else as JSON.
    function tagText(tag) {
      if (tag === undefined || tag === null) return '';
      if (typeof tag === 'string' || typeof tag === 'number' || typeof tag === 'boolean') return String(tag);
      if (!Array.isArray(tag)) {
        return Object.entries(tag).map(([k, v]) => k + ' ' + (typeof v === 'string' ? v : JSON.stringify(v))).join(' · ');
      }
      return JSON.stringify(tag);
    }

    // subscoreIn shows an entry's subscore, quietly, in el: on a board with one, the second
    // sort key that ordered equal scores; nothing on a board without.
    function subscoreIn(el, e) {
      const has = e.subscore !== undefined && e.subscore !== null;
      el.textContent = has ? num.format(e.subscore) : '';
      el.title = has ? 'subscore ' + num.format(e.subscore) : '';
      return el;
    }

    function fillRow(el, e) {
      const name = e.name || e.member;
      const oldScore = el.dataset.score;
      el.dataset.rank = e.rank;
      el.dataset.score = e.score;
      for (const r of [1, 2, 3]) el.classList.toggle('top' + r, e.rank === r);
      el.classList.toggle('me', e.member === st.member);
      el.setAttribute('aria-current', e.member === st.member ? 'true' : 'false');
      const [rank, move, slot, who, scores] = el.children;
      const [score, sub] = scores.children;
      rank.textContent = e.rank;
      const m = st.moves.get(e.member);
      move.className = 'move' + (m ? ' ' + m.dir : '');
      move.textContent = m ? (m.dir === 'up' ? '▲' : m.dir === 'down' ? '▼' : '•') + (m.by > 0 ? m.by : '') : '';
      move.title = m ? (m.dir === 'new' ? 'new on this page' : `${m.dir} ${m.by || ''}`.trim()) : '';
      if (slot.dataset.name !== name) {
        slot.replaceChildren(avatar(e.member, name));
        slot.dataset.name = name;
      }
      who.children[0].textContent = name;
      who.children[1].textContent = e.name && e.name !== e.member ? '@' + e.member : '';
      who.children[2].textContent = tagText(e.tag); // empty, and so hidden, on untagged boards
      score.textContent = scoreText(st.meta, e.score);
      subscoreIn(sub, e); // empty, and so hidden, on boards without a subscore
      if (oldScore !== undefined && oldScore !== String(e.score) && !reduceMotion) {
        el.classList.remove('bump');
        void el.offsetWidth; // restart the animation
        el.classList.add('bump');
      }
    }

    function renderPager() {
      const shown = st.shown.length;
      const from = shown ? st.shown[0].rank : st.offset + 1;
      const to = shown ? st.shown[shown - 1].rank : st.offset;
      range.textContent = shown ? `${num.format(from)}–${num.format(to)} of ${num.format(st.total)}` : `${num.format(st.total)} players`;
      prevBtn.disabled = st.offset === 0;
      nextBtn.disabled = st.offset + Math.max(shown, st.limit) >= st.total;
      pager.hidden = st.total <= st.limit && st.offset === 0;
    }

    function renderFoot(page) {
      const p = page.period || {};
      const bits = [`${num.format(page.total || 0)} ${page.total === 1 ? 'player' : 'players'}`];
      if (p.id && p.id !== 'all') bits.push(periodLabel(st.window, p.id) + (p.closed ? ' (final)' : ''));
      else if (p.start && p.end) bits.push(`${when(p.start)} – ${when(p.end)}`);
      bits.push('updated ' + new Date().toLocaleTimeString());
      footEl.textContent = bits.join(' · ');
    }

    // Times show in the board's timezone, as its periods do.
    const formats = {};
    function format(name, opts, iso) {
      if (!formats[name]) {
        try {
          formats[name] = new Intl.DateTimeFormat(undefined, { timeZone: (st.meta && st.meta.timezone) || 'UTC', ...opts });
        } catch (err) {
          formats[name] = new Intl.DateTimeFormat(undefined, opts);
        }
      }
      return formats[name].format(new Date(iso));
    }
    const when = (iso) => format('when', { day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' }, iso);
    const day = (iso) => format('day', { day: 'numeric', month: 'short' }, iso);
    const clock = (iso) => format('clock', { hour: '2-digit', minute: '2-digit' }, iso);

    // ---- search and the selected member ----

    function find(text) {
      say(searchMsg, '');
      if (!text) {
        select('');
        return;
      }
      // A name on screen finds its member; anything else is taken as a member id.
      const lower = text.toLowerCase();
      const hit = st.shown.find((e) => e.member === text) ||
        st.shown.find((e) => (e.name || '').toLowerCase() === lower) ||
        st.shown.find((e) => (e.name || '').toLowerCase().includes(lower));
      st.member = hit ? hit.member : text;
      st.around = true;
      start();
      refreshPanel();
    }

    function select(member) {
      st.member = member;
      if (st.around) {
        // The page stays where it is, no longer centred on anyone.
        st.around = false;
        start();
      }
      if (!member) {
        st.meEntry = null;
        stopFeed();
        renderPinned();
        panel.hidden = true;
        panel.replaceChildren();
        delete panel.dataset.member;
        panelSeq++;
        syncURL();
        for (const el of rowOf.values()) el.classList.remove('me');
        return;
      }
      for (const [m, el] of rowOf) el.classList.toggle('me', m === member);
      syncURL();
      refreshPanel();
      // On a narrow screen the panel stands above the list, out of sight of the row tapped.
      if (narrow.matches) panel.scrollIntoView({ block: 'start', behavior: reduceMotion ? 'auto' : 'smooth' });
    }
    const narrow = matchMedia('(max-width: 52rem)'); // style.css: the panel above the list

    let panelSeq = 0;
    let panelScore = null;
    let historyTimer = 0;
    const panelParts = {};
    let feed = null; // the selected member's live stream (followFeed)
    let viewer = ''; // the member a member token opened the page as: "you" in its panel
    api('/v1/whoami').then((w) => { viewer = w.member || ''; }).catch(() => {});

    // refreshPanel reads the selected member's entry and history afresh.
    async function refreshPanel() {
      const member = st.member;
      const my = ++panelSeq;
      stopFeed();
      if (!member) return;
      panel.hidden = false;
      buildPanel(member);
      if (!st.period) followFeed(member, my);
      const onPage = st.shown.find((e) => e.member === member);
      if (onPage) updatePanel(onPage);
      try {
        const me = await api(base + '/members/' + enc(member), { window: st.window, period: st.period });
        if (my !== panelSeq) return;
        updatePanel(me.entry, me.total);
      } catch (err) {
        if (my !== panelSeq) return;
        panelParts.stats.replaceChildren(h('p', { class: 'muted', text: err.code === 'not_found' ? 'Not on the board here.' : explain(err) }));
      }
      loadHistory(my);
      loadLeague(my);
    }

    // followFeed follows the selected member's standing in the window shown (its own live
    // stream): its rank in the panel, and a line that says who passed whom ("Ada passed you ·
    // #4 → #5"). EventSource reconnects by itself; a new connection starts with the standing.
    function followFeed(member, my) {
      const es = new EventSource(withKey(base + '/members/' + enc(member) + '/stream', { window: st.window }));
      feed = es;
      es.addEventListener('standing', (ev) => {
        if (my !== panelSeq) return;
        let s;
        try { s = JSON.parse(ev.data); } catch (err) { return; }
        panelParts.feed.dataset.live = 'true';
        if (s.rank !== undefined) {
          const e = st.meEntry && st.meEntry.member === member ? st.meEntry : { member };
          updatePanel({ ...e, rank: s.rank, score: s.score }, s.total);
        }
        const line = feedLine(member, s);
        if (line) say(panelParts.feed, line);
      });
      es.addEventListener('error', () => {
        // The board or window gone, a token expired: the page's own stream says so.
        if (es.readyState === EventSource.CLOSED && feed === es) feed = null;
      });
    }

    function stopFeed() {
      if (feed) feed.close();
      feed = null;
    }

    // feedLine tells a change of a member's standing: who passed whom, and the ranks.
    function feedLine(member, s) {
      const p = s.previous;
      if (!p || p.rank === s.rank) return '';
      const ranks = `${p.rank ? '#' + num.format(p.rank) : 'unranked'} → ${s.rank ? '#' + num.format(s.rank) : 'unranked'}`;
      const you = member === viewer;
      const name = (e) => e.name || e.member;
      const self = st.meEntry && st.meEntry.member === member ? name(st.meEntry) : member;
      if (s.passed_by) return `${name(s.passed_by)} passed ${you ? 'you' : self} · ${ranks}`;
      if (s.passed) return `${you ? 'You' : self} passed ${name(s.passed)} · ${ranks}`;
      return ranks;
    }

    // loadLeague shows the selected member's cohort, its rank there, and its league tier, on a
    // board of cohorts read in their window.
    async function loadLeague(my) {
      const member = st.member;
      const c = st.meta && st.meta.cohorts;
      panelParts.league.hidden = true;
      if (!c || st.window !== c.window) return;
      const parts = [];
      try {
        const [cohort, me] = await Promise.all([
          api(base + '/members/' + enc(member) + '/cohort', { period: st.period }),
          api(base + '/members/' + enc(member), { window: st.window, period: st.period, cohort: member }).catch(() => null),
        ]);
        parts.push(stat('Cohort', cohort.id, `${num.format(cohort.members.length)} members`));
        if (me) parts.push(stat('In cohort', '#' + num.format(me.entry.rank), 'of ' + num.format(me.total)));
      } catch (err) {
        if (err.code !== 'not_found') return;
        parts.push(stat('Cohort', '–', 'not placed yet'));
      }
      if (c.tiers) {
        try {
          const t = await api(base + '/members/' + enc(member) + '/tier');
          const mv = t.moves && t.moves[0];
          parts.push(stat('Tier', t.tier, mv && mv.from !== mv.to ? `${mv.from} → ${mv.to}` : ''));
        } catch (err) {
          // the tier is extra
        }
      }
      if (my !== panelSeq) return;
      panelParts.league.replaceChildren(...parts);
      panelParts.league.hidden = false;
    }

    function buildPanel(member) {
      if (panel.dataset.member === member) return;
      panel.dataset.member = member;
      panelScore = null;
      panelParts.avatar = h('span', { class: 'slot' }, avatar(member, member));
      panelParts.name = h('h2', { text: member });
      panelParts.id = h('p', { class: 'id' });
      panelParts.stats = h('div', { class: 'stats' });
      panelParts.feed = h('p', { class: 'feed muted', id: 'member-feed', role: 'status', hidden: true });
      panelParts.league = h('div', { class: 'stats league', id: 'league', hidden: true });
      panelParts.chart = h('div', { class: 'chart', id: 'chart' });
      panel.replaceChildren(
        h('div', { class: 'panel-head' }, panelParts.avatar, h('div', null, panelParts.name, panelParts.id),
          h('button', { type: 'button', class: 'close', 'aria-label': 'Close', text: '×', onclick: () => select('') })),
        panelParts.stats,
        panelParts.feed,
        panelParts.league,
        h('h3', { text: 'Rank history' }),
        panelParts.chart);
    }

    // renderPinned shows the selected member's row under the page when the page does not
    // hold it, from the entry its panel read last.
    function renderPinned() {
      const e = st.meEntry;
      if (!st.member || !e || e.member !== st.member || st.shown.some((s) => s.member === st.member)) {
        pinned.hidden = true;
        pinned.replaceChildren();
        return;
      }
      let el = pinned.firstElementChild;
      if (!el || el.dataset.member !== e.member) {
        el = makeRow(e.member);
        pinned.replaceChildren(el);
      }
      fillRow(el, e);
      pinned.hidden = false;
    }

    // updatePanel shows a member's entry in its panel; total, the board's, when read with it.
    function updatePanel(e, total) {
      if (!e || e.member !== st.member) return;
      st.meEntry = e;
      renderPinned();
      const name = e.name || e.member;
      panelParts.name.textContent = name;
      panelParts.id.textContent = e.name ? '@' + e.member : '';
      panelParts.avatar.replaceChildren(avatar(e.member, name));
      panelParts.stats.replaceChildren(
        stat('Rank', '#' + num.format(e.rank), 'of ' + num.format(total || st.total || e.rank)),
        stat('Score', scoreText(st.meta, e.score), e.subscore !== undefined ? 'subscore ' + num.format(e.subscore) : ''),
        stat('Reached', e.reached_at ? day(e.reached_at) : '–', e.reached_at ? clock(e.reached_at) : ''));
      if (panelScore !== null && panelScore !== e.score) {
        // A new event of this member: its history has a new point.
        clearTimeout(historyTimer);
        const my = panelSeq;
        historyTimer = setTimeout(() => loadHistory(my), 400);
      }
      panelScore = e.score;
    }

    function stat(label, value, note) {
      return h('div', { class: 'stat' }, h('span', { class: 'label', text: label }), h('b', { text: value }), note ? h('small', { text: note }) : null);
    }

    async function loadHistory(my) {
      const member = st.member;
      try {
        let { points } = await api(base + '/members/' + enc(member) + '/history', { window: st.window, limit: 200 });
        if (my !== panelSeq) return;
        // A past period's panel charts that period's points only: a point is a rank in the
        // period its write fell in.
        const p = st.period && st.shownPeriod;
        if (p && p.start && p.end) points = (points || []).filter((pt) => pt.at >= p.start && pt.at < p.end);
        panelParts.chart.replaceChildren(chart(points || []));
      } catch (err) {
        if (my !== panelSeq) return;
        panelParts.chart.replaceChildren(h('p', { class: 'muted', text: err.code === 'not_found' ? 'No history.' : explain(err) }));
      }
    }

    // chart draws ranks over time, best at the top.
    function chart(points) {
      if (!points.length) return h('p', { class: 'muted', text: 'No history yet.' });
      const pts = points.slice().reverse().map((p) => ({ ...p, t: Date.parse(p.at) }));
      const W = 320, H = 150, L = 40, R = 12, T = 14, B = 24;
      const t0 = pts[0].t, t1 = pts[pts.length - 1].t;
      const x = (p, i) => (t1 > t0 ? L + ((p.t - t0) / (t1 - t0)) * (W - L - R) : pts.length === 1 ? (L + W - R) / 2 : L + (i / (pts.length - 1)) * (W - L - R));
      let lo = Math.min(...pts.map((p) => p.rank)), hi = Math.max(...pts.map((p) => p.rank));
      if (lo === hi) { lo = Math.max(1, lo - 1); hi = lo + 2; }
      const y = (r) => T + ((r - lo) / (hi - lo)) * (H - T - B);
      const xy = pts.map((p, i) => [x(p, i), y(p.rank)]);
      const line = xy.map(([a, b], i) => `${i ? 'L' : 'M'}${a.toFixed(1)},${b.toFixed(1)}`).join('');
      const area = `${line}L${xy[xy.length - 1][0].toFixed(1)},${H - B}L${xy[0][0].toFixed(1)},${H - B}Z`;
      const grid = [lo, Math.round((lo + hi) / 2), hi].filter((v, i, a) => a.indexOf(v) === i);
      const best = Math.min(...pts.map((p) => p.rank));
      const last = pts[pts.length - 1];
      return h('figure', null,
        svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': `Rank history: now #${last.rank}, best #${best}` },
          svg('defs', null, svg('linearGradient', { id: 'hist-fill', x1: '0', y1: '0', x2: '0', y2: '1' },
            svg('stop', { offset: '0', 'stop-color': 'currentColor', 'stop-opacity': '0.35' }),
            svg('stop', { offset: '1', 'stop-color': 'currentColor', 'stop-opacity': '0' }))),
          grid.map((r) => [
            svg('line', { class: 'grid', x1: L, x2: W - R, y1: y(r), y2: y(r) }),
            svg('text', { class: 'axis', x: L - 6, y: y(r) + 4, 'text-anchor': 'end' }, '#' + r),
          ]),
          svg('text', { class: 'axis', x: L, y: H - 6 }, when(pts[0].at)),
          pts.length > 1 ? svg('text', { class: 'axis', x: W - R, y: H - 6, 'text-anchor': 'end' }, when(last.at)) : null,
          svg('path', { class: 'area', d: area, fill: 'url(#hist-fill)' }),
          svg('path', { class: 'line', d: line }),
          pts.map((p, i) => svg('circle', { class: i === pts.length - 1 ? 'dot last' : 'dot', cx: xy[i][0], cy: xy[i][1], r: i === pts.length - 1 ? 4.5 : 2.5 },
            svg('title', null, `#${p.rank} · ${scoreText(st.meta, p.score)} · ${when(p.at)}`)))),
        h('figcaption', { text: `best #${best} · ${pts.length} ${pts.length === 1 ? 'event' : 'events'}` }));
    }

    // ---- the board itself ----

    async function loadMeta(first) {
      let meta;
      try {
        meta = await api(base);
      } catch (err) {
        if (err.code === 'not_found') {
          // Nothing to page through or search: say so, and lead back to the boards.
          say(notice, `There is no board “${board}”. `);
          notice.append(h('a', { href: withKey('/'), text: 'See all boards' }));
          controls.hidden = true;
          pager.hidden = true;
          setStatus('idle'); // nothing failed: the notice says it all
        } else {
          say(notice, explain(err));
          failed(err);
        }
        app.setAttribute('aria-busy', 'false');
        if (first) setTimeout(() => loadMeta(true), 10000);
        return;
      }
      st.meta = meta;
      title.textContent = meta.title || meta.id;
      document.title = (meta.title || meta.id) + ' · laurel';
      sub.textContent = (meta.title ? meta.id + ' · ' : '') + describe(meta);
      if (!meta.windows.includes(st.window)) {
        st.window = meta.windows[0];
        st.period = ''; // a period of the window asked for is none of this one
      }
      if (first) {
        say(notice, '');
        start();
        if (st.member) refreshPanel();
      }
      loadPeriods();
    }

    loadMeta(true);
  }

  if (key) document.getElementById('home').href = withKey('/');
  const m = /^\/boards\/([^/]+)\/?$/.exec(location.pathname);
  if (m) boardPage(decodeURIComponent(m[1]));
  else if (location.pathname === '/') boardsPage(); // /admin is admin.js's
})();
