// A client of laurel's HTTP API (docs/api.md in laurel's repository). ESM, no dependencies
// beyond the platform's fetch: node 18+, browsers, Deno, Bun.
//
// Method names are the API's operationIds (GET /openapi.json), so that the two can be checked
// against each other. Every call returns the decoded JSON answer, or throws a LaurelError
// with the API's error code.

/** An error answered by laurel (or a failure to reach it: status 0, code "unavailable"). */
export class LaurelError extends Error {
  constructor(status, code, message, field, retryAfter) {
    super(message);
    this.name = "LaurelError";
    this.status = status;
    this.code = code;
    if (field !== undefined) this.field = field;
    if (retryAfter !== undefined) this.retryAfter = retryAfter;
  }
}

// Answers worth trying again: the server or its store cannot serve now, or this client sent
// too much. Anything else would fail the same way again.
const retryable = (err) => err.code === "unavailable" || err.code === "rate_limited";

const sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(t);
      reject(signal.reason);
    }, { once: true });
  });

const newID = () => globalThis.crypto.randomUUID();

export class Laurel {
  /**
   * @param {object} options
   * @param {string} options.url laurel's base URL, e.g. "http://127.0.0.1:7300"
   * @param {string} [options.key] an API key, sent as "Authorization: Bearer <key>"
   * @param {number} [options.retries] how often a call is tried again after 503 or 429 or a
   *   network failure (default 3); 0 turns retries off
   * @param {number} [options.maxDelay] the longest wait before a retry, in ms (default 10000)
   * @param {typeof fetch} [options.fetch] the fetch to use (default globalThis.fetch)
   */
  constructor({ url, key, retries = 3, maxDelay = 10_000, fetch = globalThis.fetch } = {}) {
    if (!url) throw new TypeError("laurel: url is required");
    this.url = url.replace(/\/+$/, "");
    this.key = key;
    this.retries = retries;
    this.maxDelay = maxDelay;
    // Called as a method of the client, a browser's own fetch throws "Illegal invocation":
    // it must be called on the window, so it is wrapped.
    this.fetch = (...args) => fetch(...args);
  }

  // request sends one call, again after retryable failures, waiting as the server's
  // Retry-After says (or backing off), and returns the decoded answer (undefined for 204).
  async request(method, path, { query, body, signal } = {}) {
    let url = this.url + path;
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v !== undefined && v !== null) params.set(k, String(v));
    }
    if ([...params].length) url += "?" + params;
    const headers = {};
    if (this.key) headers.authorization = `Bearer ${this.key}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    const payload = body === undefined ? undefined : JSON.stringify(body);
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.once(method, url, headers, payload, signal);
      } catch (err) {
        if (!(err instanceof LaurelError) || !retryable(err) || attempt >= this.retries || signal?.aborted) throw err;
        const backoff = Math.min(this.maxDelay, 100 * 2 ** attempt * (0.5 + Math.random()));
        await sleep(err.retryAfter !== undefined ? Math.min(this.maxDelay, err.retryAfter * 1000) : backoff, signal);
      }
    }
  }

  async once(method, url, headers, payload, signal) {
    let res;
    try {
      res = await this.fetch(url, { method, headers, body: payload, signal });
    } catch (err) {
      if (signal?.aborted) throw err;
      throw new LaurelError(0, "unavailable", `laurel: cannot reach ${this.url}: ${err.message}`);
    }
    if (res.status === 204) return undefined;
    const text = await res.text();
    if (res.ok) return text === "" ? undefined : JSON.parse(text);
    let e = {};
    try {
      e = JSON.parse(text).error ?? {};
    } catch {
      // not the API's error: a proxy's page, say
    }
    const after = res.headers.get("retry-after");
    throw new LaurelError(res.status, e.code ?? (res.status >= 500 ? "unavailable" : "invalid_argument"),
      e.message ?? `laurel: ${res.status} ${text.slice(0, 200)}`, e.field, after === null ? undefined : Number(after));
  }

  // Service

  healthz(opts) { return this.request("GET", "/healthz", opts); }
  readyz(opts) { return this.request("GET", "/readyz", opts); }
  openapi(opts) { return this.request("GET", "/openapi.json", opts); }
  async metrics({ signal } = {}) {
    const res = await this.fetch(this.url + "/metrics", { signal });
    return res.text();
  }

  // Boards

  listBoards(opts) { return this.request("GET", "/v1/boards", opts).then((r) => r.boards); }
  getBoard(board, opts) { return this.request("GET", `/v1/boards/${enc(board)}`, opts); }
  putBoard(board, spec = {}, opts) { return this.request("PUT", `/v1/boards/${enc(board)}`, { ...opts, body: spec }); }
  deleteBoard(board, opts) { return this.request("DELETE", `/v1/boards/${enc(board)}`, opts); }

  // Events. Before the first attempt each event without an id gets one (a random UUID) when
  // retries are on, so that a retry of a write that did reach the store is answered
  // "duplicate" instead of counted twice. The ids are in the results.

  submitBoardEvents(board, events, { ranks, importing, signal } = {}) {
    const list = (Array.isArray(events) ? events : [events]).map((ev) => this.withID(ev));
    return this.request("POST", `/v1/boards/${enc(board)}/events`, {
      query: { ranks: ranks === false ? "false" : undefined, import: importing ? "true" : undefined },
      body: { events: list }, signal,
    }).then((r) => r.results);
  }
  submitEvents(events, { ranks, importing, signal } = {}) {
    return this.request("POST", "/v1/events", {
      query: { ranks: ranks === false ? "false" : undefined, import: importing ? "true" : undefined },
      body: { events: events.map((ev) => this.withID(ev)) }, signal,
    }).then((r) => r.results);
  }
  retractEvent(board, id, opts) { return this.request("DELETE", `/v1/boards/${enc(board)}/events/${enc(id)}`, opts); }

  withID(ev) {
    return ev.id === undefined && this.retries > 0 ? { ...ev, id: newID() } : ev;
  }

  // Reads. Each takes window, at (a Date or RFC 3339 text) or period.

  getEntries(board, { offset, limit, minScore, maxScore, metadata, signal, ...at } = {}) {
    return this.request("GET", `/v1/boards/${enc(board)}/entries`, {
      query: { ...when(at), offset, limit, min_score: minScore, max_score: maxScore, metadata: metadata ? "true" : undefined }, signal,
    });
  }
  getMemberEntry(board, member, { metadata, signal, ...at } = {}) {
    return this.request("GET", `/v1/boards/${enc(board)}/members/${enc(member)}`, {
      query: { ...when(at), metadata: metadata ? "true" : undefined }, signal,
    });
  }
  getAround(board, member, { radius, metadata, signal, ...at } = {}) {
    return this.request("GET", `/v1/boards/${enc(board)}/members/${enc(member)}/around`, {
      query: { ...when(at), radius, metadata: metadata ? "true" : undefined }, signal,
    });
  }
  lookup(board, members, { metadata, signal, ...at } = {}) {
    const { cohort, ...w } = when(at);
    return this.request("POST", `/v1/boards/${enc(board)}/lookup`, {
      query: { metadata: metadata ? "true" : undefined, cohort }, body: { members, ...w }, signal,
    });
  }
  getRank(board, score, { signal, ...at } = {}) {
    return this.request("GET", `/v1/boards/${enc(board)}/rank`, { query: { ...when(at), score }, signal });
  }
  listPeriods(board, window, opts) {
    return this.request("GET", `/v1/boards/${enc(board)}/periods`, { ...opts, query: { window } }).then((r) => r.periods);
  }
  getResults(board, period, { window, offset, limit, signal } = {}) {
    return this.request("GET", `/v1/boards/${enc(board)}/periods/${enc(period)}/results`, { query: { window, offset, limit }, signal });
  }
  memberHistory(board, member, { window, limit, cohort, signal } = {}) {
    return this.request("GET", `/v1/boards/${enc(board)}/members/${enc(member)}/history`, { query: { window, limit, cohort }, signal })
      .then((r) => r.points);
  }

  // Tournaments
  joinTournament(board, member, opts) { return this.request("POST", `/v1/boards/${enc(board)}/members/${enc(member)}/join`, opts); }
  getEntry(board, member, opts) { return this.request("GET", `/v1/boards/${enc(board)}/members/${enc(member)}/entry`, opts); }
  getTier(board, member, opts) { return this.request("GET", `/v1/boards/${enc(board)}/members/${enc(member)}/tier`, opts); }
  getCohort(board, member, { signal, ...at } = {}) {
    return this.request("GET", `/v1/boards/${enc(board)}/members/${enc(member)}/cohort`, { query: when(at), signal });
  }

  // Webhooks (admin)
  listHooks(opts) { return this.request("GET", "/v1/hooks", opts).then((r) => r.hooks); }
  putHook(hook, spec, opts) { return this.request("PUT", `/v1/hooks/${enc(hook)}`, { ...opts, body: spec }); }
  getHook(hook, opts) { return this.request("GET", `/v1/hooks/${enc(hook)}`, opts); }
  deleteHook(hook, opts) { return this.request("DELETE", `/v1/hooks/${enc(hook)}`, opts); }
  listDeliveries(hook, { state, after, limit, signal } = {}) {
    return this.request("GET", `/v1/hooks/${enc(hook)}/deliveries`, { query: { state, after, limit }, signal }).then((r) => r.deliveries);
  }
  getDelivery(hook, delivery, opts) { return this.request("GET", `/v1/hooks/${enc(hook)}/deliveries/${enc(delivery)}`, opts); }
  replayDelivery(hook, delivery, opts) { return this.request("POST", `/v1/hooks/${enc(hook)}/deliveries/${enc(delivery)}/replay`, opts); }

  // Members

  putProfile(member, spec, opts) { return this.request("PUT", `/v1/members/${enc(member)}`, { ...opts, body: spec }); }
  getProfile(member, opts) { return this.request("GET", `/v1/members/${enc(member)}`, opts); }
  deleteMember(member, opts) { return this.request("DELETE", `/v1/members/${enc(member)}`, opts); }
  hideMember(member, opts) { return this.request("POST", `/v1/members/${enc(member)}/hide`, opts); }
  unhideMember(member, opts) { return this.request("POST", `/v1/members/${enc(member)}/unhide`, opts); }
  whoami(opts) { return this.request("GET", "/v1/whoami", opts); }

  /**
   * streamPage follows a board's live top page: an async iterator of Pages, the current one
   * first, then each change. It reconnects by itself (after the server's Retry-After, or
   * backing off) until signal aborts or the loop breaks.
   */
  async *streamPage(board, { window, limit, signal } = {}) {
    const params = new URLSearchParams();
    if (window) params.set("window", window);
    if (limit) params.set("limit", String(limit));
    const url = `${this.url}/v1/boards/${enc(board)}/stream${[...params].length ? "?" + params : ""}`;
    const headers = { accept: "text/event-stream" };
    if (this.key) headers.authorization = `Bearer ${this.key}`;
    for (let attempt = 0; !signal?.aborted; attempt++) {
      let res;
      try {
        res = await this.fetch(url, { headers, signal });
      } catch (err) {
        if (signal?.aborted) return;
        await sleep(Math.min(this.maxDelay, 100 * 2 ** Math.min(attempt, 10)), signal).catch(() => {});
        continue;
      }
      if (!res.ok) {
        const text = await res.text();
        let e = {};
        try { e = JSON.parse(text).error ?? {}; } catch { /* not JSON */ }
        const err = new LaurelError(res.status, e.code ?? "unavailable", e.message ?? text, e.field,
          res.headers.get("retry-after") === null ? undefined : Number(res.headers.get("retry-after")));
        if (!retryable(err)) throw err;
        await sleep(err.retryAfter !== undefined ? err.retryAfter * 1000 : Math.min(this.maxDelay, 100 * 2 ** Math.min(attempt, 10)), signal).catch(() => {});
        continue;
      }
      attempt = 0;
      try {
        for await (const ev of serverEvents(res.body)) {
          if (ev.event === "page") yield JSON.parse(ev.data);
        }
      } catch (err) {
        if (signal?.aborted) return;
        // the connection broke: connect again
      }
    }
  }
}

// serverEvents parses a text/event-stream body into {event, data} messages.
async function* serverEvents(body) {
  const decoder = new TextDecoder();
  let buf = "";
  let event = "message";
  let data = [];
  for await (const chunk of body) {
    buf += decoder.decode(chunk, { stream: true });
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl).replace(/\r$/, "");
      buf = buf.slice(nl + 1);
      if (line === "") {
        if (data.length) yield { event, data: data.join("\n") };
        event = "message";
        data = [];
      } else if (line.startsWith(":")) {
        // a comment: the server's keep-alive
      } else {
        const i = line.indexOf(":");
        const field = i < 0 ? line : line.slice(0, i);
        const value = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
        if (field === "event") event = value;
        else if (field === "data") data.push(value);
      }
    }
  }
}

const enc = encodeURIComponent;

// when turns the read options window, at and period into query parameters.
function when({ window, at, period, cohort }) {
  return { window, period, at: at instanceof Date ? at.toISOString() : at, cohort };
}

// mintMemberToken signs a member token (an HS256 JWT) as a game's own server does, so that
// the game's client can read its boards and submit its member's events without a key
// (docs/api.md, "Member tokens"). Keep the secret on the server: never mint in the client.
export async function mintMemberToken({ secret, kid, member, boards, scope = "write", ttlSeconds = 3600, audience = "laurel", now = Date.now() }) {
  if (!secret || !member || !boards?.length) throw new TypeError("mintMemberToken needs secret, member and boards");
  const iat = Math.floor(now / 1000);
  const header = { alg: "HS256", typ: "JWT", ...(kid ? { kid } : {}) };
  const payload = { sub: member, aud: audience, iat, exp: iat + ttlSeconds, boards, scope };
  const text = new TextEncoder();
  const signing = `${b64url(text.encode(JSON.stringify(header)))}.${b64url(text.encode(JSON.stringify(payload)))}`;
  const keyBytes = typeof secret === "string" ? text.encode(secret) : secret;
  const hmac = await globalThis.crypto.subtle.importKey("raw", keyBytes, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const sig = await globalThis.crypto.subtle.sign("HMAC", hmac, text.encode(signing));
  return `${signing}.${b64url(new Uint8Array(sig))}`;
}

function b64url(bytes) {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
