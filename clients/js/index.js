// A client of laurel's HTTP API (docs/api.md in laurel's repository). ESM, no dependencies
// beyond the platform's fetch and Web Crypto: node 20+, browsers, Deno, Bun.
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

// Answers worth trying again: the server or its store cannot serve now, this client sent too
// much, or a write's outcome is unknown — sent again, it is answered for what was stored, as
// every write this client retries is idempotent (its events carry ids). Anything else would
// fail the same way again.
const retryable = (err) => err.code === "unavailable" || err.code === "rate_limited" || err.code === "outcome_unknown";

// codeOf is the API's code for an answer that is not the API's JSON (a proxy's page, say),
// from its status (docs/api.md, "Errors"): a gateway's 502 or 504 is unavailable, as laurel's
// own 503 is.
const codeOf = (status) => ({ 400: "invalid_argument", 401: "unauthenticated", 403: "permission_denied", 404: "not_found",
  405: "method_not_allowed", 409: "conflict", 413: "payload_too_large", 429: "rate_limited", 500: "internal" })[status] ??
  (status >= 500 ? "unavailable" : "invalid_argument");

// errorOf reads an answer that is not 2xx into a LaurelError.
async function errorOf(res) {
  const text = await res.text();
  let e = {};
  try {
    e = JSON.parse(text).error ?? {};
  } catch {
    // not the API's error: a proxy's page, say
  }
  const after = res.headers.get("retry-after");
  return new LaurelError(res.status, e.code ?? codeOf(res.status), e.message ?? `laurel: ${res.status} ${text.slice(0, 200)}`,
    e.field, after === null || after === "" || isNaN(Number(after)) ? undefined : Number(after));
}

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

  // wait is how long to wait before try number attempt+1 after err: the server's Retry-After
  // or an exponential backoff, both capped at maxDelay.
  wait(err, attempt) {
    if (err?.retryAfter !== undefined) return Math.min(this.maxDelay, err.retryAfter * 1000);
    return Math.min(this.maxDelay, 100 * 2 ** Math.min(attempt, 16) * (0.5 + Math.random()));
  }

  // request sends one call, again after retryable failures, waiting as the server's
  // Retry-After says (or backing off), and returns the decoded answer (undefined for 204; the
  // text itself with raw).
  async request(method, path, { query, body, signal, raw } = {}) {
    checkPath(path);
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
        return await this.once(method, url, headers, payload, signal, raw);
      } catch (err) {
        if (!(err instanceof LaurelError) || !retryable(err) || attempt >= this.retries || signal?.aborted) throw err;
        await sleep(this.wait(err, attempt), signal);
      }
    }
  }

  async once(method, url, headers, payload, signal, raw) {
    let res;
    try {
      res = await this.fetch(url, { method, headers, body: payload, signal });
    } catch (err) {
      if (signal?.aborted) throw err;
      throw new LaurelError(0, "unavailable", `laurel: cannot reach ${this.url}: ${err.message}`);
    }
    if (!res.ok) throw await errorOf(res);
    if (res.status === 204) return undefined;
    const text = await res.text();
    if (raw) return text;
    return text === "" ? undefined : JSON.parse(text);
  }

  // Service

  healthz(opts) { return this.request("GET", "/healthz", opts); }
  readyz(opts) { return this.request("GET", "/readyz", opts); }
  openapi(opts) { return this.request("GET", "/openapi.json", opts); }
  metrics(opts) { return this.request("GET", "/metrics", { ...opts, raw: true }); }

  // Boards

  listBoards(opts) { return this.request("GET", "/v1/boards", opts).then((r) => r.boards); }
  getBoard(board, opts) { return this.request("GET", `/v1/boards/${enc(board)}`, opts); }
  putBoard(board, spec = {}, opts) { return this.request("PUT", `/v1/boards/${enc(board)}`, { ...opts, body: spec }); }
  deleteBoard(board, opts) { return this.request("DELETE", `/v1/boards/${enc(board)}`, opts); }

  // Events. Before the first attempt each event without an id gets one (a random UUID) when
  // retries are on, so that a retry of a write that did reach the store is answered
  // "duplicate" instead of counted twice. The ids are in the results.

  // submitBoardEvents sends one event as one and a list as a batch, as the caller gave them,
  // so that a refusal's field names what the caller wrote: "member" for an event alone,
  // "events[2].member" in a list (docs/api.md, "Errors").
  submitBoardEvents(board, events, { ranks, importing, signal } = {}) {
    const body = Array.isArray(events) ? { events: events.map((ev) => this.withID(ev)) } : this.withID(events);
    return this.request("POST", `/v1/boards/${enc(board)}/events`, {
      query: { ranks: ranks === false ? "false" : undefined, import: importing ? "true" : undefined },
      body, signal,
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
  getRank(board, score, { signal, subscore, ...at } = {}) {
    return this.request("GET", `/v1/boards/${enc(board)}/rank`, { query: { ...when(at), score, subscore }, signal });
  }
  // The histogram of a span's scores: buckets (equal width between the lowest and highest
  // score, default 10) or edges (a list of ascending scores), not both.
  getDistribution(board, { buckets, edges, signal, ...at } = {}) {
    return this.request("GET", `/v1/boards/${enc(board)}/distribution`, {
      query: { ...when(at), buckets, edges: edges?.join(",") }, signal,
    });
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

  // The review queue.

  reportFlag(board, member, reason, opts) {
    return this.request("POST", `/v1/boards/${enc(board)}/members/${enc(member)}/flags`, { ...opts, body: { reason } });
  }
  listFlags({ state, board, member, after, limit, signal } = {}) {
    return this.request("GET", "/v1/flags", { query: { state, board, member, after, limit }, signal }).then((r) => r.flags);
  }
  getFlag(flag, opts) { return this.request("GET", `/v1/flags/${enc(flag)}`, opts); }
  resolveFlag(flag, resolution, opts) { return this.request("POST", `/v1/flags/${enc(flag)}`, { ...opts, body: resolution }); }

  // Members

  putProfile(member, spec, opts) { return this.request("PUT", `/v1/members/${enc(member)}`, { ...opts, body: spec }); }
  getProfile(member, opts) { return this.request("GET", `/v1/members/${enc(member)}`, opts); }
  deleteMember(member, opts) { return this.request("DELETE", `/v1/members/${enc(member)}`, opts); }
  hideMember(member, opts) { return this.request("POST", `/v1/members/${enc(member)}/hide`, opts); }
  unhideMember(member, opts) { return this.request("POST", `/v1/members/${enc(member)}/unhide`, opts); }
  whoami(opts) { return this.request("GET", "/v1/whoami", opts); }

  /**
   * streamPage follows a board's live top page: an async iterator of Pages, the current one
   * first, then each change. It takes the reads' window, at, period and cohort, and limit and
   * metadata. It reconnects by itself until signal aborts or the loop breaks: after the
   * server's Retry-After, or backing off while connections yield no page; and when nothing,
   * not even the server's ping every 15 s, arrives for idleTimeout ms (a connection that died
   * without closing).
   */
  async *streamPage(board, { limit, metadata, signal, idleTimeout = 45_000, ...at } = {}) {
    const params = { ...when(at), limit, metadata: metadata ? "true" : undefined };
    yield* this.#follow(`/v1/boards/${enc(board)}/stream`, params, "page", { signal, idleTimeout });
  }

  /**
   * streamMember follows one member's standing on a board: an async iterator of standings,
   * {window, period, total, rank, score, previous, passed_by, passed}, one for each window (or
   * the one window names) first, then one each time the member's rank or score in a window
   * changes; passed_by and passed name the member that passed it or that it passed, when one
   * alone did. It reconnects as streamPage does, and a new connection starts with the current
   * standings again.
   */
  async *streamMember(board, member, { window, signal, idleTimeout = 45_000 } = {}) {
    yield* this.#follow(`/v1/boards/${enc(board)}/members/${enc(member)}/stream`, { window }, "standing", { signal, idleTimeout });
  }

  // #follow yields the data of a live stream's events of one name, reconnecting (streamPage).
  async *#follow(route, query, name, { signal, idleTimeout }) {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) {
      if (v !== undefined && v !== null && v !== "") params.set(k, String(v));
    }
    const path = checkPath(route);
    const url = `${this.url}${path}${[...params].length ? "?" + params : ""}`;
    const headers = { accept: "text/event-stream" };
    if (this.key) headers.authorization = `Bearer ${this.key}`;
    for (let attempt = 0; !signal?.aborted; attempt++) {
      // Each connection has its own signal: the caller's, or the idle timer's.
      const conn = new AbortController();
      const stop = () => conn.abort(signal.reason);
      signal?.addEventListener("abort", stop, { once: true });
      let idle;
      const alive = () => {
        clearTimeout(idle);
        idle = setTimeout(() => conn.abort(new Error("laurel: the live stream went quiet")), idleTimeout);
      };
      let refused; // a 503 or 429, whose Retry-After says when to connect again
      try {
        alive();
        const res = await this.fetch(url, { headers, signal: conn.signal });
        if (res.ok) {
          for await (const ev of serverEvents(res.body, conn.signal, alive)) {
            if (ev.event === name) {
              attempt = 0;
              clearTimeout(idle); // the caller's time with a page is not the connection's
              yield JSON.parse(ev.data);
              alive();
            }
          }
        } else {
          refused = await errorOf(res);
          if (!retryable(refused)) throw refused;
        }
      } catch (err) {
        if (signal?.aborted) return;
        if (err instanceof LaurelError) throw err;
        // the connection broke, or went quiet: connect again
      } finally {
        clearTimeout(idle);
        signal?.removeEventListener("abort", stop);
        conn.abort();
      }
      if (signal?.aborted) return;
      await sleep(this.wait(refused, attempt), signal).catch(() => {});
    }
  }
}

// serverEvents parses a text/event-stream body into {event, data} messages, calling alive for
// each chunk that arrives (comments, the server's pings, included), until signal aborts.
async function* serverEvents(body, signal, alive) {
  const decoder = new TextDecoder();
  let buf = "";
  let event = "message";
  let data = [];
  for await (const chunk of chunksOf(body, signal)) {
    alive();
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

// checkPath refuses a path with a "." or ".." segment, which fetch drops (escaped or not), so
// that the call would reach another route or another member. It returns the path.
function checkPath(path) {
  const dots = path.split("/").find((seg) => seg === "." || seg === "..");
  if (dots !== undefined) throw new LaurelError(400, "invalid_argument", `laurel: "${dots}" cannot be an id: it cannot stand in a URL's path`);
  return path;
}

// chunksOf iterates over a streamed body until it ends or signal aborts. It reads with a
// reader, which every ReadableStream has (not every browser's is async-iterable), and does
// not count on the fetch to end a read when its signal aborts.
async function* chunksOf(body, signal) {
  const reader = body.getReader();
  const aborted = new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
  aborted.catch(() => {});
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), aborted]);
      if (done) return;
      yield value;
    }
  } finally {
    reader.cancel().catch(() => {});
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
