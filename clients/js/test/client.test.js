// The client against a real laurel, started by the Go test beside this directory
// (go test ./clients/js), which passes its URL and admin key.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { Laurel, LaurelError, mintMemberToken } from "../index.js";

const url = process.env.LAUREL_URL;
const key = process.env.LAUREL_ADMIN_KEY;
if (!url || !key) throw new Error("run by `go test ./clients/js`, which starts laurel and sets LAUREL_URL and LAUREL_ADMIN_KEY");

const client = new Laurel({ url, key });
let boards = 0;
const newBoard = async (spec = { windows: ["all", "day", "last7d"] }) => {
  const id = `js-${process.pid}-${++boards}`;
  await client.putBoard(id, spec);
  return id;
};

test("every operation and schema of the OpenAPI file is in the client and its types", async () => {
  const api = await client.openapi();
  const dts = await readFile(new URL("../index.d.ts", import.meta.url), "utf8");
  for (const [path, ops] of Object.entries(api.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      if (typeof op !== "object" || !op.operationId) continue;
      assert.equal(typeof client[op.operationId], "function", `${method.toUpperCase()} ${path}: no method ${op.operationId}`);
      assert.match(dts, new RegExp(`\\b${op.operationId}\\(`), `index.d.ts does not declare ${op.operationId}`);
    }
  }
  for (const name of Object.keys(api.components.schemas)) {
    assert.match(dts, new RegExp(`export (interface|type) ${name}\\b`), `index.d.ts has no type ${name}`);
  }
  const codes = api.components.schemas.Error.properties.error.properties.code.enum;
  const declared = [...dts.match(/export type ErrorCode =([^;]*);/)[1].matchAll(/"([a-z_]+)"/g)].map((m) => m[1]);
  assert.deepEqual(declared.sort(), [...codes].sort());
});

test("each type of index.d.ts has the fields of its OpenAPI schema, required as there, enums alike", async () => {
  const api = await client.openapi();
  const dts = await readFile(new URL("../index.d.ts", import.meta.url), "utf8");
  for (const [name, schema] of Object.entries(api.components.schemas)) {
    if (!schema.properties) continue;
    const block = new RegExp(`export interface ${name} \\{\\n([\\s\\S]*?)\\n\\}`).exec(dts);
    assert.ok(block, `index.d.ts: no interface ${name}`);
    // Its own fields: the lines indented by two spaces, "name: type;" or "name?: type;", a
    // type alias (Weekday;) read as what it stands for.
    const alias = (type) => new RegExp(`export type ${/^(\w+);$/.exec(type)?.[1]} =([^;]*);`).exec(dts)?.[1] ?? type;
    const fields = new Map();
    for (const m of block[1].matchAll(/^  (\w+)(\??): (.*)$/gm)) fields.set(m[1], { optional: m[2] === "?", type: alias(m[3]) });
    assert.deepEqual([...fields.keys()].sort(), Object.keys(schema.properties).sort(), `${name}: fields`);
    for (const [field, prop] of Object.entries(schema.properties)) {
      const required = (schema.required ?? []).includes(field);
      assert.equal(fields.get(field).optional, !required, `${name}.${field}: ${required ? "required" : "optional"} in the OpenAPI file`);
      for (const value of prop.enum ?? []) {
        assert.match(fields.get(field).type, new RegExp(`"${value}"`), `${name}.${field}: no "${value}"`);
      }
      const scalar = { string: "string", integer: "number", boolean: "boolean", array: "[]" }[prop.type];
      if (scalar && !prop.enum) assert.ok(fields.get(field).type.includes(scalar), `${name}.${field}: ${fields.get(field).type}, not ${prop.type}`);
    }
  }
});

test("a write says where the member came from: #3 → #1", async () => {
  const board = await newBoard();
  const [first] = await client.submitBoardEvents(board, [{ member: "ann", value: 5 }, { member: "bob", value: 4 }, { member: "cy", value: 3 }]);
  assert.equal(first.entries.all.previous, undefined, "no standing before a first score");
  const [moved] = await client.submitBoardEvents(board, { member: "cy", value: 10 });
  assert.deepEqual(moved.entries.all, { rank: 1, score: 13, previous: { rank: 3, score: 3 } });
  assert.deepEqual(moved.entries.day.previous, { rank: 3, score: 3 });
});

test("a subscore breaks ties: equal times, the fewer penalties first", async () => {
  const board = await newBoard({ order: "asc", subscore: "asc", mode: "best", windows: ["all", "day"] });
  assert.equal((await client.getBoard(board)).subscore, "asc");
  await assert.rejects(client.putBoard(board, { subscore: "desc" }), { code: "conflict", field: "subscore" });
  const [ada] = await client.submitBoardEvents(board, { member: "ada", value: 61000, subscore: 2 });
  assert.deepEqual(ada.entries.all, { rank: 1, score: 61000, subscore: 2 });
  await client.submitBoardEvents(board, [{ member: "bob", value: 61000, subscore: 1 }, { member: "cy", value: 62000 }]);
  const page = await client.getEntries(board);
  assert.deepEqual(page.entries.map((e) => [e.member, e.score, e.subscore]), [["bob", 61000, 1], ["ada", 61000, 2], ["cy", 62000, 0]]);
  assert.equal((await client.getMemberEntry(board, "ada")).entry.subscore, 2);
  assert.equal((await client.getRank(board, 61000, { subscore: 1 })).rank, 2, "after bob's same pair, before ada's");
  assert.equal((await client.getRank(board, 61000)).rank, 1, "subscore 0 by default: before bob's 1");
  const [better] = await client.submitBoardEvents(board, { member: "ada", value: 61000, subscore: 0 });
  assert.deepEqual(better.entries.all, { rank: 1, score: 61000, subscore: 0, previous: { rank: 2, score: 61000, subscore: 2 } });
  assert.deepEqual((await client.memberHistory(board, "ada", { window: "all" })).map((p) => p.subscore), [0, 2]);
  await assert.rejects(client.submitBoardEvents(board, { member: "dee", value: 1, subscore: 1.5 }), { code: "invalid_argument", field: "subscore" });

  const plain = await newBoard();
  assert.equal((await client.getBoard(plain)).subscore, undefined);
  await assert.rejects(client.submitBoardEvents(plain, [{ member: "ada", value: 1, subscore: 0 }]), { code: "invalid_argument", field: "events[0].subscore" });
  const [none] = await client.submitBoardEvents(plain, { member: "ada", value: 1 });
  assert.equal("subscore" in none.entries.all, false, "no subscore on a board without");
  assert.equal("subscore" in (await client.getEntries(plain)).entries[0], false);
});

test("a tag on each score: the entry shows its event's, a point its own", async () => {
  const board = await newBoard();
  await client.submitBoardEvents(board, [
    { member: "tag-racer", value: 7, tag: { car: "kart-3" } },
    { member: "tag-racer", value: 6, tag: "kart-5" },
  ]);
  const entry = (await client.getMemberEntry(board, "tag-racer")).entry;
  assert.equal(entry.score, 13);
  assert.equal(entry.tag, "kart-5", "sum: the latest counted event's tag");
  assert.deepEqual((await client.memberHistory(board, "tag-racer", { window: "all" })).map((p) => p.tag), ["kart-5", { car: "kart-3" }]);
  await assert.rejects(client.submitBoardEvents(board, [{ member: "tag-racer", value: 1, tag: "x".repeat(300) }]),
    { code: "invalid_argument", field: "events[0].tag" });
});

test("a board's life: write, read every way, retract, delete", async () => {
  const board = await newBoard();
  const info = await client.getBoard(board);
  assert.deepEqual(info.windows, ["all", "day", "last7d"]);
  assert.ok((await client.listBoards()).some((b) => b.id === board));

  const results = await client.submitBoardEvents(board, [
    { member: "alice", value: 5, id: "a1", name: "Alice" },
    { member: "bob", value: 3 },
    { member: "carol", value: 4 },
  ]);
  assert.equal(results.length, 3);
  assert.equal(results[0].status, "applied");
  assert.deepEqual(results[0].entries.all, { rank: 1, score: 5 });
  assert.ok(results[1].id, "the client gives an event without id one");

  const page = await client.getEntries(board, { window: "day", limit: 2 });
  assert.equal(page.total, 3);
  assert.deepEqual(page.entries.map((e) => [e.rank, e.member, e.score]), [[1, "alice", 5], [2, "carol", 4]]);
  assert.equal(page.entries[0].name, "Alice");
  assert.equal((await client.getEntries(board, { minScore: 4, maxScore: 4 })).entries[0].member, "carol");
  assert.equal((await client.getMemberEntry(board, "bob")).entry.rank, 3);
  assert.deepEqual((await client.getAround(board, "carol", { radius: 1 })).entries.map((e) => e.member), ["alice", "carol", "bob"]);
  assert.deepEqual((await client.lookup(board, ["bob", "alice", "nobody"])).entries.map((e) => e.rank), [1, 3]);
  assert.deepEqual(await client.getRank(board, 4), { rank: 3, total: 3 });
  // The end of a run: rank, the share beaten, the neighbours, and where the scores lie.
  const me = await client.getMemberEntry(board, "carol");
  assert.deepEqual([me.entry.rank, me.total, me.entry.percentile], [2, 3, 50]);
  assert.deepEqual((await client.getAround(board, "carol", { radius: 1 })).entries.map((e) => e.percentile), [100, 50, 0]);
  assert.deepEqual((await client.lookup(board, ["bob"])).entries[0].percentile, 0);
  assert.equal((await client.getEntries(board)).entries[0].percentile, undefined, "a page of the top has none");
  const dist = await client.getDistribution(board, { buckets: 3 });
  assert.deepEqual(dist.buckets, [{ min: 3, max: 3, count: 1 }, { min: 4, max: 4, count: 1 }, { min: 5, max: 5, count: 1 }]);
  assert.equal(dist.total, 3);
  assert.deepEqual((await client.getDistribution(board, { edges: [0, 4, 10], window: "day" })).buckets.map((b) => b.count), [1, 2]);
  await assert.rejects(client.getDistribution(board, { edges: [4, 0] }), { code: "invalid_argument", field: "edges" });
  const periods = await client.listPeriods(board, "day");
  assert.equal(periods[0].closed, false);
  assert.equal((await client.getEntries(board, { at: new Date() })).total, 3);
  const points = await client.memberHistory(board, "alice", { window: "all" });
  assert.deepEqual(points.map((p) => [p.rank, p.score]), [[1, 5]]);

  assert.equal((await client.putProfile("alice", { metadata: { country: "SE" } })).metadata.country, "SE");
  assert.equal((await client.getProfile("alice")).name, "Alice");
  await client.hideMember("carol");
  assert.equal((await client.getEntries(board)).total, 2);
  await client.unhideMember("carol");
  assert.deepEqual(await client.retractEvent(board, "a1"), { status: "retracted" });
  assert.equal((await client.getEntries(board)).entries[0].member, "carol");
  assert.equal((await client.getEntries(board)).total, 2, "alice's only event was retracted");
  await client.deleteMember("bob");
  assert.deepEqual((await client.getEntries(board)).entries.map((e) => e.member), ["carol"]);
  await client.deleteBoard(board);
  await assert.rejects(client.getBoard(board), { name: "LaurelError", status: 404, code: "not_found" });
});

test("rewards, results and webhooks", async () => {
  const rewards = [{ window: "day", ranks: [1, 1], reward: { chest: "gold" } }];
  const board = await newBoard({ windows: ["day"], rewards });
  assert.deepEqual((await client.getBoard(board)).rewards, rewards);
  await client.submitBoardEvents(board, [{ member: "ann", value: 3 }]);
  const today = (await client.listPeriods(board, "day"))[0].id;
  await assert.rejects(client.getResults(board, today), { status: 409, code: "conflict", field: "period" });

  const hook = `js-${process.pid}`;
  const made = await client.putHook(hook, { url: "http://127.0.0.1:9/results", secret: "a-secret-of-16-bytes", boards: [board] });
  assert.deepEqual([made.id, made.url, made.boards, made.secret], [hook, "http://127.0.0.1:9/results", [board], undefined]);
  assert.ok((await client.listHooks()).some((h) => h.id === hook));
  assert.deepEqual(await client.listDeliveries(hook), []);
  await assert.rejects(client.getDelivery(hook, `${hook}:${board}:day:${today}:1`), { status: 404, code: "not_found" });
  await assert.rejects(client.putHook("js-bad", { url: "ftp://x" }), { status: 400, code: "invalid_argument", field: "url" });
  await client.deleteHook(hook);
  await assert.rejects(client.getHook(hook), { status: 404 });
});

test("a held lap, the review queue, and a confirmation that retracts it", async () => {
  const board = await newBoard({ order: "asc", mode: "best", windows: ["all"], guard: { jump: { window: "all", percent: 10, action: "hold" } } });
  await client.submitBoardEvents(board, [{ member: "ada", id: "a1", value: 60_000 }, { member: "bo", id: "b1", value: 61_000 }]);
  const [held] = await client.submitBoardEvents(board, { member: "ada", id: "a2", value: 45_000 });
  assert.ok(held.flag, "a held lap names its flag");
  assert.deepEqual((await client.getEntries(board)).entries.map((e) => e.member), ["bo"]);
  const [open] = await client.listFlags({ state: "open", board });
  assert.deepEqual([open.id, open.member, open.rule, open.events.map((e) => e.id)], [held.flag, "ada", "jump", ["a2"]]);
  assert.equal((await client.getFlag(held.flag)).state, "open");
  assert.equal((await client.resolveFlag(held.flag, { action: "confirm" })).state, "confirmed");
  await assert.rejects(client.resolveFlag(held.flag, { action: "clear" }), { status: 409, code: "conflict" });
  await client.unhideMember("ada");
  assert.deepEqual((await client.getEntries(board)).entries.map((e) => [e.member, e.score]), [["ada", 60_000], ["bo", 61_000]]);

  const report = await client.reportFlag(board, "bo", "speed hack");
  assert.deepEqual([report.reason, report.state], ["speed hack", "open"]);
  assert.equal((await client.resolveFlag(report.id, { action: "clear" })).state, "cleared");
  assert.equal((await client.getEntries(board)).total, 2);
});

test("a rate rule refuses a member's events past its max in an interval", async () => {
  const board = await newBoard({ guard: { rate: { max: 2, interval: "60s" } } });
  assert.deepEqual((await client.getBoard(board)).guard.rate, { max: 2, interval: "1m", action: "refuse" });
  await client.submitBoardEvents(board, [{ member: "ada", value: 1 }, { member: "ada", value: 1 }, { member: "bo", value: 1 }]);
  await assert.rejects(client.submitBoardEvents(board, { member: "ada", value: 1 }), { status: 422, code: "guard_refused", field: "ts" });
  await assert.rejects(newBoard({ guard: { rate: { max: 2, interval: "1us" } } }), { status: 400, code: "invalid_argument", field: "guard.rate.interval" });
});

test("errors carry the API's code, status and field", async () => {
  const board = await newBoard();
  await assert.rejects(client.submitBoardEvents(board, [{ member: "a", value: 1 }, { member: "b", value: 1.5 }]),
    (err) => err instanceof LaurelError && err.status === 400 && err.code === "invalid_argument" && err.field === "events[1].value");
  await assert.rejects(client.submitBoardEvents(board, { member: "a", value: 1.5 }), { status: 400, code: "invalid_argument", field: "value" });
  await assert.rejects(client.getEntries(board, { window: "fortnight" }), { code: "invalid_argument", field: "window" });
  await assert.rejects(client.submitBoardEvents(board, { member: "a", value: 2, id: "a1" }).then(() =>
    client.submitBoardEvents(board, { member: "a", value: 3, id: "a1" })), { status: 409, code: "conflict" });
  await assert.rejects(new Laurel({ url, key: "wrong" }).listBoards(), { status: 401, code: "unauthenticated" });
  await assert.rejects(new Laurel({ url: "http://127.0.0.1:1", retries: 0 }).healthz(), { status: 0, code: "unavailable" });
});

test("a retry after a lost answer reuses the event ids: counted once", async () => {
  const board = await newBoard();
  let calls = 0;
  // The first answer is lost on its way back, as when a connection drops after the server
  // stored the write.
  const lossy = async (input, init) => {
    const res = await fetch(input, init);
    if (++calls === 1) return new Response(JSON.stringify({ error: { code: "unavailable", message: "lost" } }), { status: 503, headers: { "retry-after": "0" } });
    return res;
  };
  const flaky = new Laurel({ url, key, fetch: lossy });
  const results = await flaky.submitBoardEvents(board, { member: "dana", value: 7 });
  assert.equal(calls, 2);
  assert.equal(results[0].status, "duplicate", "the retry found the write already stored");
  assert.equal((await client.getMemberEntry(board, "dana")).entry.score, 7);
});

test("a write answered outcome_unknown is sent again with its ids: counted once", async () => {
  const board = await newBoard();
  let calls = 0;
  // The store committed the write, then could not learn that it had (docs/api.md, "Errors").
  const unknown = async (input, init) => {
    const res = await fetch(input, init);
    if (++calls === 1) return new Response(JSON.stringify({ error: { code: "outcome_unknown", message: "may be stored" } }), { status: 503, headers: { "retry-after": "0" } });
    return res;
  };
  const results = await new Laurel({ url, key, fetch: unknown }).submitBoardEvents(board, { member: "erin", value: 4 });
  assert.equal(calls, 2, "outcome_unknown is tried again");
  assert.equal(results[0].status, "duplicate");
  assert.equal((await client.getMemberEntry(board, "erin")).entry.score, 4);
});

test("retries give up after the configured number", async () => {
  let calls = 0;
  const down = async () => {
    calls++;
    return new Response(JSON.stringify({ error: { code: "unavailable", message: "recovering" } }), { status: 503, headers: { "retry-after": "0" } });
  };
  await assert.rejects(new Laurel({ url, retries: 2, fetch: down }).listBoards(), { status: 503, code: "unavailable" });
  assert.equal(calls, 3);
  calls = 0;
  await assert.rejects(new Laurel({ url, fetch: async () => { calls++; return new Response('{"error":{"code":"not_found","message":"x"}}', { status: 404 }); } }).getBoard("x"), { code: "not_found" });
  assert.equal(calls, 1, "a 404 is not retried");
});

test("the live page: the current page, then each change", async () => {
  const board = await newBoard();
  await client.submitBoardEvents(board, { member: "erin", value: 1 });
  const ac = new AbortController();
  const seen = [];
  const done = (async () => {
    for await (const page of client.streamPage(board, { window: "all", limit: 5, signal: ac.signal })) {
      seen.push(page.entries.map((e) => `${e.member}:${e.score}`).join(","));
      if (seen.length === 1) await client.submitBoardEvents(board, { member: "finn", value: 2 });
      if (seen.length === 2) ac.abort();
    }
  })();
  const timeout = setTimeout(() => ac.abort(), 10_000);
  await done;
  clearTimeout(timeout);
  assert.deepEqual(seen, ["erin:1", "finn:2,erin:1"]);
});

test("a member's live standing: its rank now, then who passed it", async () => {
  const board = await newBoard();
  await client.submitBoardEvents(board, [{ member: "js-rival", value: 1, name: "Rival" }, { member: "me", value: 3 }]);
  const ac = new AbortController();
  const seen = [];
  const done = (async () => {
    for await (const s of client.streamMember(board, "me", { window: "all", signal: ac.signal })) {
      seen.push(`${s.window} ${s.previous ? `#${s.previous.rank} → ` : ""}#${s.rank}${s.passed_by ? ` passed by ${s.passed_by.name}` : ""}`);
      if (seen.length === 1) await client.submitBoardEvents(board, { member: "js-rival", value: 4 });
      if (seen.length === 2) ac.abort();
    }
  })();
  const timeout = setTimeout(() => ac.abort(), 10_000);
  await done;
  clearTimeout(timeout);
  assert.deepEqual(seen, ["all #1", "all #1 → #2 passed by Rival"]);
});

test("a game client with a member token submits its own member's events and nothing else", async () => {
  const board = await newBoard();
  const token = await mintMemberToken({ secret: process.env.LAUREL_TOKEN_SECRET, kid: process.env.LAUREL_TOKEN_KID, member: "ada", boards: [board], ttlSeconds: 600 });
  const game = new Laurel({ url, key: token });
  assert.deepEqual(await game.whoami().then(({ expires_at, ...rest }) => rest), { scope: "write", member: "ada", boards: [board] });
  const res = await game.submitBoardEvents(board, { member: "ada", value: 5 });
  assert.equal(res[0].status, "applied");
  const page = await game.getEntries(board);
  assert.equal(page.entries[0].member, "ada");
  await assert.rejects(game.submitBoardEvents(board, { member: "bob", value: 500 }), (err) => {
    assert.ok(err instanceof LaurelError);
    assert.equal(err.status, 403);
    assert.equal(err.code, "permission_denied");
    assert.equal(err.field, "member"); // as docs/api.md's example of a token's refused event
    return true;
  });
  // In a list, the field names the event by its place.
  await assert.rejects(game.submitBoardEvents(board, [{ member: "ada", value: 1 }, { member: "bob", value: 500 }]),
    { status: 403, code: "permission_denied", field: "events[1].member" });
  assert.equal((await game.getMemberEntry(board, "ada")).entry.score, 5, "nothing of the refused batch was stored");
  const forged = await mintMemberToken({ secret: "another-secret-of-at-least-32-bytes", kid: process.env.LAUREL_TOKEN_KID, member: "ada", boards: [board] });
  await assert.rejects(new Laurel({ url, key: forged, retries: 0 }).getEntries(board), (err) => err.status === 401 && err.code === "unauthenticated");
});

test("ids that fetch cannot put in a URL's path are refused before sending", async () => {
  const board = await newBoard();
  let calls = 0;
  const counting = new Laurel({ url, key, fetch: (...args) => { calls++; return fetch(...args); } });
  for (const call of [() => counting.getMemberEntry(board, "."), () => counting.getAround(board, ".."), () => counting.retractEvent(board, "..")]) {
    await assert.rejects(call(), (err) => err instanceof LaurelError && err.code === "invalid_argument" && /cannot stand in a URL's path/.test(err.message));
  }
  assert.equal(calls, 0, "nothing was sent");
  // Dots within an id are ids like any other.
  await client.submitBoardEvents(board, { member: "...", value: 2, id: "../x" });
  assert.equal((await client.getMemberEntry(board, "...")).entry.score, 2);
  assert.equal((await client.retractEvent(board, "../x")).status, "retracted");
  await assert.rejects(client.getMemberEntry(board, "..."), { code: "not_found" });
});

test("an answer that is not laurel's JSON gets the API's code for its status", async () => {
  const page = (status, headers = {}) => async () => new Response("<html>proxy</html>", { status, headers });
  await assert.rejects(new Laurel({ url, fetch: page(404) }).getBoard("x"), { status: 404, code: "not_found" });
  await assert.rejects(new Laurel({ url, fetch: page(403) }).getBoard("x"), { status: 403, code: "permission_denied" });
  let calls = 0;
  const gateway = async () => { calls++; return new Response("bad gateway", { status: 502, headers: { "retry-after": "0" } }); };
  await assert.rejects(new Laurel({ url, retries: 1, fetch: gateway }).getBoard("x"), { status: 502, code: "unavailable" });
  assert.equal(calls, 2, "a gateway's 502 is tried again");
  await assert.rejects(new Laurel({ url: "http://127.0.0.1:1", retries: 0 }).metrics(), { status: 0, code: "unavailable" });
  assert.match(await client.metrics(), /^# HELP /m);
});

// A fake stream: each fetch answers 200 with the chunks that body gives it.
const streaming = (body) => {
  const fetches = [];
  const fake = async (input, init) => {
    fetches.push(String(input));
    const stream = new ReadableStream({
      async start(c) {
        for (const chunk of body(fetches.length)) c.enqueue(new TextEncoder().encode(chunk));
        if (body.close) c.close();
      },
    });
    init.signal?.addEventListener("abort", () => stream.cancel().catch(() => {}));
    return new Response(stream, { status: 200, headers: { "content-type": "text/event-stream" } });
  };
  return { fetches, fake };
};
const pageEvent = (n) => `event: page\ndata: ${JSON.stringify({ board: "b", window: "all", total: n, entries: [] })}\n\n`;

test("the live page connects again when its connection goes quiet, and takes the reads' options", async () => {
  const { fetches, fake } = streaming((n) => [pageEvent(n)]); // one page, then silence, never closed
  const ac = new AbortController();
  const seen = [];
  const timeout = setTimeout(() => ac.abort(), 5_000);
  for await (const page of new Laurel({ url, fetch: fake }).streamPage("b", { window: "week", period: "2026-11-16", cohort: "ann", metadata: true, limit: 3, idleTimeout: 200, signal: ac.signal })) {
    seen.push(page.total);
    if (seen.length === 2) ac.abort();
  }
  clearTimeout(timeout);
  assert.deepEqual(seen, [1, 2], "a second connection after the first went quiet");
  const q = new URL(fetches[0]).searchParams;
  assert.deepEqual(Object.fromEntries(q), { window: "week", period: "2026-11-16", cohort: "ann", metadata: "true", limit: "3" });
});

test("the live page backs off while its connections end without a page", async () => {
  const empty = () => [];
  empty.close = true;
  const { fetches, fake } = streaming(empty);
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 1_000);
  for await (const _ of new Laurel({ url, fetch: fake }).streamPage("b", { signal: ac.signal })) assert.fail("no page was sent");
  // 50–150 ms, then doubling: about five connections in a second, not hundreds.
  assert.ok(fetches.length >= 2 && fetches.length <= 8, `${fetches.length} connections in a second`);
});

test("the live page waits as Retry-After says, at most maxDelay", async () => {
  let calls = 0;
  const ac = new AbortController();
  const busy = async () => {
    if (++calls === 2) ac.abort();
    return new Response('{"error":{"code":"unavailable","message":"busy"}}', { status: 503, headers: { "retry-after": "30" } });
  };
  const started = Date.now();
  for await (const _ of new Laurel({ url, maxDelay: 100, fetch: busy }).streamPage("b", { signal: ac.signal })) assert.fail("no page");
  assert.equal(calls, 2);
  assert.ok(Date.now() - started < 2_000, `waited ${Date.now() - started} ms for a Retry-After of 30 s capped at 100 ms`);
});
