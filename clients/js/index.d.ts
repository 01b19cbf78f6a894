// Types of laurel's HTTP API. Each interface is named after a schema of GET /openapi.json, and
// the client's tests check that every schema and every operation there is here, each with the
// schema's fields, required or optional as there, and its enums.

/** The API's error codes. */
export type ErrorCode =
  | "invalid_argument"
  | "too_late"
  | "unauthenticated"
  | "permission_denied"
  | "not_found"
  | "method_not_allowed"
  | "conflict"
  | "guard_refused"
  | "payload_too_large"
  | "rate_limited"
  | "unavailable"
  | "outcome_unknown"
  | "internal";

export interface Error {
  error: { code: ErrorCode; message: string; field?: string };
}

/** An error answered by laurel; status 0 when laurel could not be reached. */
export declare class LaurelError extends globalThis.Error {
  name: "LaurelError";
  status: number;
  code: ErrorCode;
  field?: string;
  /** Seconds to wait before trying again, when the server said. */
  retryAfter?: number;
}

export type Weekday = "monday" | "tuesday" | "wednesday" | "thursday" | "friday" | "saturday" | "sunday";

export interface BoardSpec {
  order?: "desc" | "asc";
  /** Ranks equal scores by each event's subscore in this order (asc: the lower first). Set at creation only (409 conflict after). */
  subscore?: "asc" | "desc";
  mode?: "sum" | "best" | "last";
  windows?: string[];
  timezone?: string;
  week_start?: Weekday;
  late_limit?: string;
  keep?: number;
  min_value?: number;
  max_value?: number;
  title?: string;
  metadata?: Record<string, unknown>;
  /** What the final ranks of closed periods earn; [] removes every rule. */
  rewards?: RewardRule[];
  /** Makes the board a tournament; {} removes it. */
  tournament?: TournamentSpec;
  /** Splits each period of a window into cohorts; {} removes them. */
  cohorts?: CohortsSpec;
  /** What the board refuses as implausible before it ranks; {} removes it. */
  guard?: GuardSpec;
}

/** A board's guard: an event that breaks a rule is refused, 422 guard_refused, with nothing stored. */
export interface GuardSpec {
  /** Events only with a key: a member token's are refused (403). */
  trusted?: boolean;
  /** Any board: at most max events of a member at times in any interval ("1m") that ends at one of them. */
  rate?: RateRule;
  /** Sum boards: at most max gained in a span of window. */
  gain?: GuardRule;
  /** Best boards: a new best beats the previous one in a span of window by at most amount and/or percent. */
  jump?: GuardRule;
}

export interface RateRule {
  /** 1 to 100 000. */
  max: number;
  /** A duration of whole milliseconds, 1ms to 7d, such as "1m". */
  interval: string;
  action?: "refuse" | "hold";
}

export interface GuardRule {
  /** One of the board's windows. */
  window: string;
  max?: number;
  amount?: number;
  percent?: number;
  action?: "refuse" | "hold";
}

export interface CohortsSpec {
  window?: string;
  size?: number;
  by?: string;
  /** A league: its tiers, lowest first. */
  tiers?: string[];
  promote?: number;
  demote?: number;
  demote_absent?: boolean;
}

export interface TierMove {
  period: string;
  from: string;
  to: string;
  cohort?: string;
  rank?: number;
  of?: number;
}

/** A member's league tier, and its moves, newest first. */
export interface Tier {
  board: string;
  member: string;
  tier: string;
  moves: TierMove[];
}

/** A member's cohort in one period. */
export interface Cohort {
  board: string;
  window: string;
  period: string;
  id: string;
  key: string;
  members: string[];
}

export interface TournamentSpec {
  start?: string;
  end?: string;
  window?: string;
  duration?: string;
  max_members?: number;
  join_required?: boolean;
  max_attempts?: number;
}

/** A member's entry in the run of a tournament taking events now. */
export interface Entrant {
  board: string;
  member: string;
  run: { id: string; start?: string; end?: string };
  joined: boolean;
  joined_at?: string;
  attempts: number;
  max_attempts?: number;
  members?: number;
  max_members?: number;
}

/** A reward by final rank ([from, to]) or for the first percent per cent, in a calendar window. */
export interface RewardRule {
  window: string;
  tier?: string;
  ranks?: number[];
  percent?: number;
  reward: Record<string, unknown>;
}

export interface Period {
  id?: string;
  start?: string;
  end?: string;
  closed?: boolean;
  total?: number;
}

export interface CurrentPeriod {
  period: Period;
  total: number;
}

export interface Board {
  id: string;
  order: "desc" | "asc";
  /** The order of the board's second sort key, when it has one. */
  subscore?: "asc" | "desc";
  mode: "sum" | "best" | "last";
  windows: string[];
  timezone: string;
  week_start: Weekday;
  late_limit: string;
  keep: number;
  min_value?: number;
  max_value?: number;
  title: string;
  metadata: Record<string, unknown>;
  created_at: string;
  current: Record<string, CurrentPeriod>;
  rewards?: RewardRule[];
  tournament?: TournamentSpec;
  cohorts?: CohortsSpec;
  guard?: GuardSpec;
}

export interface BoardList {
  boards: Board[];
}

export interface Event {
  /** Only in a submission across boards (submitEvents). */
  board?: string;
  member: string;
  value: number;
  /** On a board with a subscore only (400 elsewhere): the second sort key, an integer; left out, 0. */
  subscore?: number;
  /** RFC 3339; default: when laurel receives the event. */
  ts?: string;
  /** Makes the event idempotent and retractable (this client cannot retract "." or ".."). With retries on (the default), the client gives an event without one a random id before its first attempt. */
  id?: string;
  name?: string;
  /** What the score was made with (a car, a replay id, a build): any JSON value of at most 256 bytes as compact JSON. Entries show the tag of the event that made their score. */
  tag?: Tag;
}

/** An event's tag: any JSON value, as laurel keeps it (compact). */
export type Tag = string | number | boolean | Tag[] | { [key: string]: Tag };

export interface EventBatch {
  events: Event[];
}

export type EventSubmit = Event | EventBatch;

export interface Standing {
  rank: number;
  score: number;
  /** On a board with a subscore. */
  subscore?: number;
  /** In a write's answer: the standing there before the write (the whole batch); absent where
   *  the member was not ranked there before, for a duplicate and for a hidden member. */
  previous?: PreviousStanding;
}

export interface PreviousStanding {
  rank: number;
  score: number;
  /** On a board with a subscore. */
  subscore?: number;
}

export interface EventResult {
  member: string;
  id?: string;
  status: "applied" | "duplicate";
  /** The flag that holds the event for review (a hold rule held it; its member is hidden). */
  flag?: string;
  /** Per window, the member's standing right after the write; absent with ranks: false. */
  entries?: Record<string, Standing>;
}

export interface EventResults {
  results: EventResult[];
}

/** A rewarded member's final entry, with its reward. */
export interface Result {
  rank: number;
  member: string;
  score: number;
  /** On a board with a subscore (and only there): the second sort key that goes with the score; 0 where the events carried none. */
  subscore?: number;
  reached_at: string;
  name?: string;
  /** The tag of the event that made the final score, when it carried one. */
  tag?: Tag;
  metadata?: Record<string, unknown>;
  reward: Record<string, unknown>;
  /** On a board with cohorts: the member's cohort, within which it is ranked. */
  cohort?: string;
}

/** A closed period's results; a webhook delivery's body is one part of them, with its delivery fields. */
export interface Results {
  type?: "period.results";
  delivery?: string;
  hook?: string;
  part?: number;
  parts?: number;
  board: string;
  window: string;
  period: Period;
  total: number;
  rewarded: number;
  results: Result[];
}

export interface HookSpec {
  url?: string;
  /** Signs each delivery: Laurel-Signature: v1=hex(HMAC-SHA256(secret, timestamp + "." + body)). */
  secret?: string;
  boards?: string[];
  /** Also tell it of flags: opened, holding more events, resolved. */
  flags?: boolean;
}

export interface Hook {
  id: string;
  url: string;
  boards: string[];
  flags: boolean;
  created_at: string;
}

export interface HookList {
  hooks: Hook[];
}

export interface Delivery {
  id: string;
  hook: string;
  board: string;
  window: string;
  period: string;
  part: number;
  parts: number;
  state: "pending" | "delivered" | "failed";
  attempts: number;
  next_attempt_at?: string;
  last_status?: number;
  last_error?: string;
  created_at: string;
  delivered_at?: string;
  /** What it posts: a part of a closed period's results, or a flag's notice. */
  body?: Results | FlagNotice;
}

export interface DeliveryList {
  deliveries: Delivery[];
}

export interface FlagEvent {
  rule: string;
  id?: string;
  value: number;
  ts: string;
}

/** A member held for review on a board: by a hold rule of its guard, or by the game. */
export interface Flag {
  id: string;
  board: string;
  member: string;
  rule?: string;
  reason?: string;
  state: "open" | "cleared" | "confirmed";
  opened: string;
  resolved?: string;
  erased?: boolean;
  events: FlagEvent[];
}

/** A webhook delivery's body for a hook that asks for flags: what a write did to a flag. */
export interface FlagNotice {
  type: "flag.opened" | "flag.held" | "flag.resolved";
  delivery: string;
  hook: string;
  flag: Flag;
}

export interface FlagList {
  flags: Flag[];
}

export interface FlagReport {
  reason: string;
}

export interface FlagResolution {
  action: "clear" | "confirm";
  erase?: boolean;
}

export interface Retracted {
  status: "retracted";
}

export interface Entry {
  rank: number;
  member: string;
  score: number;
  /** On a board with a subscore (and only there): the second sort key that goes with the score; 0 where the events carried none. */
  subscore?: number;
  reached_at: string;
  /** In member, around and lookup reads: the share of the others ranked that this entry beats, in percent, rounded down to hundredths (100 for the first, 0 for the last). */
  percentile?: number;
  name?: string;
  /** The tag of the event that made the score (best: the best event's; last: the latest's; sum: the latest counted event's), when it carried one. */
  tag?: Tag;
  metadata?: Record<string, unknown>;
}

export interface Page {
  board: string;
  window: string;
  period: Period;
  total: number;
  entries: Entry[];
}

export interface MemberEntry {
  board: string;
  window: string;
  period: Period;
  total: number;
  entry: Entry;
}

export interface LookupRequest {
  members: string[];
  window?: string;
  at?: string;
  period?: string;
}

export interface Rank {
  rank: number;
  total: number;
}

/** A span's score histogram, buckets in ascending score; total counts every member ranked, those outside given edges too. */
export interface Distribution {
  board: string;
  window: string;
  period: Period;
  total: number;
  buckets: Bucket[];
}

/** How many members have a score from min to max, both included. */
export interface Bucket {
  min: number;
  max: number;
  count: number;
}

export interface PeriodList {
  periods: Period[];
}

export interface ProfileSpec {
  name?: string;
  metadata?: Record<string, unknown>;
}

export interface Profile {
  member: string;
  name: string;
  metadata: Record<string, unknown>;
  hidden: boolean;
}

export interface Hidden {
  member: string;
  hidden: boolean;
}

/** What the client's key or member token may do (GET /v1/whoami). */
export interface Whoami {
  scope: "read" | "write" | "admin";
  /** No key is configured on the server: anyone may do anything. */
  open?: boolean;
  /** A member token's member, boards and expiry. */
  member?: string;
  boards?: string[];
  expires_at?: string;
}

export interface Status {
  status: string;
}

export interface HistoryPoint {
  at: string;
  score: number;
  /** On a board with a subscore: the member's right after the event. */
  subscore?: number;
  rank: number;
  /** The event's own tag, when it carried one. */
  tag?: Tag;
}

export interface History {
  points: HistoryPoint[];
}

/** Which ranking a read answers from: a window, at an instant or in a closed period. */
export interface When {
  window?: string;
  at?: string | Date;
  period?: string;
  /** Rank within this member's cohort (a board with cohorts). */
  cohort?: string;
}

export interface CallOptions {
  signal?: AbortSignal;
}

export interface ClientOptions {
  /** laurel's base URL, e.g. "http://127.0.0.1:7300". */
  url: string;
  /** An API key, sent as "Authorization: Bearer <key>". */
  key?: string;
  /** Retries after 503, 429 or a network failure (default 3; 0: none). */
  retries?: number;
  /** The longest wait before a retry, in ms (default 10000), the server's Retry-After included. */
  maxDelay?: number;
  /** The fetch to use (default globalThis.fetch). */
  fetch?: typeof globalThis.fetch;
}

export interface SubmitOptions extends CallOptions {
  /** false: leave out the ranks of the answer (and save the server the work). */
  ranks?: boolean;
  /** A bulk import of old events (admin key): lifts the board's late_limit. */
  importing?: boolean;
}

export declare class Laurel {
  constructor(options: ClientOptions);
  url: string;
  key?: string;
  retries: number;
  maxDelay: number;
  fetch: typeof globalThis.fetch;

  healthz(opts?: CallOptions): Promise<Status>;
  readyz(opts?: CallOptions): Promise<Status>;
  openapi(opts?: CallOptions): Promise<Record<string, unknown>>;
  metrics(opts?: CallOptions): Promise<string>;

  listBoards(opts?: CallOptions): Promise<Board[]>;
  getBoard(board: string, opts?: CallOptions): Promise<Board>;
  putBoard(board: string, spec?: BoardSpec, opts?: CallOptions): Promise<Board>;
  deleteBoard(board: string, opts?: CallOptions): Promise<void>;

  /** One event is sent as one, a list as a batch: a refusal's field is "member" or "events[1].member". */
  submitBoardEvents(board: string, events: Event | Event[], opts?: SubmitOptions): Promise<EventResult[]>;
  submitEvents(events: (Event & { board: string })[], opts?: SubmitOptions): Promise<EventResult[]>;
  retractEvent(board: string, id: string, opts?: CallOptions): Promise<Retracted>;

  getEntries(board: string, opts?: When & CallOptions & { offset?: number; limit?: number; minScore?: number; maxScore?: number; metadata?: boolean }): Promise<Page>;
  getMemberEntry(board: string, member: string, opts?: When & CallOptions & { metadata?: boolean }): Promise<MemberEntry>;
  getAround(board: string, member: string, opts?: When & CallOptions & { radius?: number; metadata?: boolean }): Promise<Page>;
  lookup(board: string, members: string[], opts?: When & CallOptions & { metadata?: boolean }): Promise<Page>;
  /** On a board with a subscore, subscore (default 0) goes with score: the rank of the pair. */
  getRank(board: string, score: number, opts?: When & CallOptions & { subscore?: number }): Promise<Rank>;
  /** buckets: equal widths between the lowest and highest score (1–1000, default 10); or edges: ascending scores, [e0, e1−1] … [ek−1, ek]. */
  getDistribution(board: string, opts?: When & CallOptions & { buckets?: number; edges?: number[] }): Promise<Distribution>;
  listPeriods(board: string, window: string, opts?: CallOptions): Promise<Period[]>;
  /** A closed period's rewarded members in rank order; 409 conflict while it may still change. */
  getResults(board: string, period: string, opts?: CallOptions & { window?: string; offset?: number; limit?: number }): Promise<Results>;

  /** Joins the run of a tournament taking events now; the same Entrant whether it joined now or was in already. */
  joinTournament(board: string, member: string, opts?: CallOptions): Promise<Entrant>;
  getEntry(board: string, member: string, opts?: CallOptions): Promise<Entrant>;
  /** A member's cohort in the period read (now by default). */
  getCohort(board: string, member: string, opts?: When & CallOptions): Promise<Cohort>;
  getTier(board: string, member: string, opts?: CallOptions): Promise<Tier>;

  listHooks(opts?: CallOptions): Promise<Hook[]>;
  putHook(hook: string, spec: HookSpec, opts?: CallOptions): Promise<Hook>;
  getHook(hook: string, opts?: CallOptions): Promise<Hook>;
  deleteHook(hook: string, opts?: CallOptions): Promise<void>;
  listDeliveries(hook: string, opts?: CallOptions & { state?: "pending" | "delivered" | "failed"; after?: string; limit?: number }): Promise<Delivery[]>;
  getDelivery(hook: string, delivery: string, opts?: CallOptions): Promise<Delivery>;
  replayDelivery(hook: string, delivery: string, opts?: CallOptions): Promise<Delivery>;
  /** The game's anti-cheat holds a member for review (a key, not a member token). */
  reportFlag(board: string, member: string, reason: string, opts?: CallOptions): Promise<Flag>;
  /** The review queue (admin), in the order the flags were opened. */
  listFlags(opts?: CallOptions & { state?: "open" | "cleared" | "confirmed"; board?: string; member?: string; after?: string; limit?: number }): Promise<Flag[]>;
  getFlag(flag: string, opts?: CallOptions): Promise<Flag>;
  /** clear: the member back, its events stand; confirm: the flagged events retracted, the member hidden (or erased). */
  resolveFlag(flag: string, resolution: FlagResolution, opts?: CallOptions): Promise<Flag>;
  /** With cohort (the member itself): its ranks in its cohorts, a point a write. */
  memberHistory(board: string, member: string, opts?: CallOptions & { window?: string; limit?: number; cohort?: string }): Promise<HistoryPoint[]>;

  putProfile(member: string, spec: ProfileSpec, opts?: CallOptions): Promise<Profile>;
  getProfile(member: string, opts?: CallOptions): Promise<Profile>;
  deleteMember(member: string, opts?: CallOptions): Promise<void>;
  hideMember(member: string, opts?: CallOptions): Promise<Hidden>;
  unhideMember(member: string, opts?: CallOptions): Promise<Hidden>;
  whoami(opts?: CallOptions): Promise<Whoami>;

  /**
   * The live top page: the current Page, then each change. Reconnects by itself: after the
   * server's Retry-After, backing off while connections yield no page, and when nothing (not
   * even the server's ping every 15 s) arrives for idleTimeout ms (default 45000).
   */
  streamPage(board: string, opts?: When & CallOptions & { limit?: number; metadata?: boolean; idleTimeout?: number }): AsyncGenerator<Page, void, void>;
  /**
   * A member's live standing: one MemberStanding a window (or the one `window` names), then
   * one each time its rank or score in a window changes. Reconnects as streamPage does; a new
   * connection starts with the current standings.
   */
  streamMember(board: string, member: string, opts?: CallOptions & { window?: string; idleTimeout?: number }): AsyncGenerator<MemberStanding, void, void>;
}

/** One event of a member's live stream: its standing in one window's current period. */
export interface MemberStanding {
  window: string;
  period: Period;
  /** Members ranked in the period when the event was sent. */
  total: number;
  /** Absent while the member is not ranked in the period (not scored yet, hidden, erased). */
  rank?: number;
  score?: number;
  /** With rank, on a board with a subscore. */
  subscore?: number;
  /** What the stream last sent for this window in the same period; absent in the first events and a new period's first. */
  previous?: { rank?: number; score?: number; subscore?: number };
  /** The member that passed it, when one member alone did. */
  passed_by?: Entry;
  /** The member it passed, when it passed one member alone. */
  passed?: Entry;
}

/** Signs a member token (HS256 JWT) for one member and some boards, as a game's own server does; pass it as `key` to a client. */
export declare function mintMemberToken(opts: {
  secret: string | Uint8Array;
  kid?: string;
  member: string;
  boards: string[];
  scope?: "read" | "write";
  ttlSeconds?: number;
  audience?: string;
  now?: number;
}): Promise<string>;
