// The API's operations, one method each, named by its operationId; docs/api.md says what each
// does. Reads take window, at or period (at most one of the last two), and cohort, as the API
// does; a parameter left null is not sent, and the server's default applies.
using System;
using System.Collections.Generic;
using System.Globalization;
using System.Linq;
using System.Net.Http;
using System.Threading;
using System.Threading.Tasks;

namespace Laurel
{
    public sealed partial class LaurelClient
    {
        // Service

        public Task<ServerStatus> HealthzAsync(CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Get, "/healthz", null, null, One(ServerStatus.Read), cancellationToken);

        public Task<ServerStatus> ReadyzAsync(CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Get, "/readyz", null, null, One(ServerStatus.Read), cancellationToken);

        /// <summary>The API's OpenAPI description, decoded as free-form JSON.</summary>
        public Task<IDictionary<string, object>> OpenapiAsync(CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Get, "/openapi.json", null, null, text => JsonObject.Of(Json.Parse(text), "the answer").Whole, cancellationToken);

        /// <summary>Prometheus's text.</summary>
        public Task<string> MetricsAsync(CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Get, "/metrics", null, null, text => text, cancellationToken);

        public Task<Whoami> WhoamiAsync(CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Get, "/v1/whoami", null, null, One(Whoami.Read), cancellationToken);

        // Boards

        public Task<IReadOnlyList<Board>> ListBoardsAsync(CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Get, "/v1/boards", null, null, ListOf("boards", Board.Read), cancellationToken);

        public Task<Board> GetBoardAsync(string board, CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Get, "/v1/boards/" + Seg(board), null, null, One(Board.Read), cancellationToken);

        /// <summary>Creates the board, or updates it with the properties spec sets.</summary>
        public Task<Board> PutBoardAsync(string board, BoardSpec spec = null, CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Put, "/v1/boards/" + Seg(board), null, (spec ?? new BoardSpec()).ToJson(), One(Board.Read), cancellationToken);

        public Task DeleteBoardAsync(string board, CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Delete, "/v1/boards/" + Seg(board), null, null, nothing, cancellationToken);

        // Events. Before the first attempt each event without an id gets one (a random UUID)
        // when retries are on, so that a retry of a write that did reach the store is answered
        // "duplicate" instead of counted twice. The ids are in the results.

        /// <param name="ranks">false: leave the ranks out of the results (and save the server the work).</param>
        /// <param name="import">A bulk import of old events (admin key): lifts the board's late_limit.</param>
        public Task<IReadOnlyList<EventResult>> SubmitBoardEventsAsync(string board, IEnumerable<Event> events, bool ranks = true, bool import = false, CancellationToken cancellationToken = default(CancellationToken)) =>
            Submit("/v1/boards/" + Seg(board) + "/events", events, ranks, import, cancellationToken);

        /// <summary>Submits one event.</summary>
        public Task<IReadOnlyList<EventResult>> SubmitBoardEventsAsync(string board, Event ev, bool ranks = true, bool import = false, CancellationToken cancellationToken = default(CancellationToken)) =>
            SubmitBoardEventsAsync(board, new[] { ev }, ranks, import, cancellationToken);

        /// <summary>Submits events that each name their Board, atomically across boards.</summary>
        public Task<IReadOnlyList<EventResult>> SubmitEventsAsync(IEnumerable<Event> events, bool ranks = true, bool import = false, CancellationToken cancellationToken = default(CancellationToken)) =>
            Submit("/v1/events", events, ranks, import, cancellationToken);

        Task<IReadOnlyList<EventResult>> Submit(string path, IEnumerable<Event> events, bool ranks, bool import, CancellationToken cancellationToken)
        {
            if (events == null) throw new ArgumentNullException(nameof(events));
            var list = new List<object>();
            foreach (var ev in events)
            {
                if (ev == null) throw new ArgumentException("laurel: an event is null", nameof(events));
                list.Add(WithId(ev).ToJson());
            }
            var query = new Query().Flag("ranks", !ranks, "false").Flag("import", import, "true");
            return Request(HttpMethod.Post, path, query, new Dictionary<string, object> { ["events"] = list }, ListOf("results", EventResult.Read), cancellationToken);
        }

        // WithId is ev, or a copy of it with a random id when it has none and retries are on.
        Event WithId(Event ev) => ev.Id != null || Retries <= 0 ? ev : new Event
        {
            Board = ev.Board,
            Member = ev.Member,
            Value = ev.Value,
            Subscore = ev.Subscore,
            Ts = ev.Ts,
            Id = Guid.NewGuid().ToString(),
            Name = ev.Name,
            Tag = ev.Tag,
        };

        public Task<Retracted> RetractEventAsync(string board, string id, CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Delete, "/v1/boards/" + Seg(board) + "/events/" + Seg(id), null, null, One(Retracted.Read), cancellationToken);

        // Reads

        /// <summary>A page of consecutive ranks; with minScore and/or maxScore, of the entries whose score lies in that inclusive range.</summary>
        public Task<Page> GetEntriesAsync(string board, string window = null, DateTimeOffset? at = null, string period = null, string cohort = null,
            int? offset = null, int? limit = null, long? minScore = null, long? maxScore = null, bool metadata = false,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            var query = new Query().When(window, at, period, cohort).Add("offset", offset).Add("limit", limit)
                .Add("min_score", minScore).Add("max_score", maxScore).Flag("metadata", metadata, "true");
            return Request(HttpMethod.Get, "/v1/boards/" + Seg(board) + "/entries", query, null, One(Page.Read), cancellationToken);
        }

        public Task<MemberEntry> GetMemberEntryAsync(string board, string member, string window = null, DateTimeOffset? at = null, string period = null, string cohort = null,
            bool metadata = false, CancellationToken cancellationToken = default(CancellationToken))
        {
            var query = new Query().When(window, at, period, cohort).Flag("metadata", metadata, "true");
            return Request(HttpMethod.Get, "/v1/boards/" + Seg(board) + "/members/" + Seg(member), query, null, One(MemberEntry.Read), cancellationToken);
        }

        /// <summary>Up to 2·radius+1 consecutive entries centred on the member (radius 5 by default).</summary>
        public Task<Page> GetAroundAsync(string board, string member, int? radius = null, string window = null, DateTimeOffset? at = null, string period = null, string cohort = null,
            bool metadata = false, CancellationToken cancellationToken = default(CancellationToken))
        {
            var query = new Query().When(window, at, period, cohort).Add("radius", radius).Flag("metadata", metadata, "true");
            return Request(HttpMethod.Get, "/v1/boards/" + Seg(board) + "/members/" + Seg(member) + "/around", query, null, One(Page.Read), cancellationToken);
        }

        /// <summary>The entries of those members that are ranked (friends, a clan), in rank order, with their ranks on the whole board.</summary>
        public Task<Page> LookupAsync(string board, IEnumerable<string> members, string window = null, DateTimeOffset? at = null, string period = null, string cohort = null,
            bool metadata = false, CancellationToken cancellationToken = default(CancellationToken))
        {
            if (members == null) throw new ArgumentNullException(nameof(members));
            var body = new Dictionary<string, object> { ["members"] = new List<string>(members) };
            Json.Put(body, "window", window);
            Json.Put(body, "at", at);
            Json.Put(body, "period", period);
            var query = new Query().Add("cohort", cohort).Flag("metadata", metadata, "true");
            return Request(HttpMethod.Post, "/v1/boards/" + Seg(board) + "/lookup", query, body, One(Page.Read), cancellationToken);
        }

        /// <summary>The rank a member reaching score now would get; on a board with a subscore, with subscore (default 0): the rank of the pair.</summary>
        public Task<ScoreRank> GetRankAsync(string board, long score, string window = null, DateTimeOffset? at = null, string period = null, string cohort = null,
            long? subscore = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            var query = new Query().When(window, at, period, cohort).Add("score", score).Add("subscore", subscore);
            return Request(HttpMethod.Get, "/v1/boards/" + Seg(board) + "/rank", query, null, One(ScoreRank.Read), cancellationToken);
        }

        /// <summary>
        /// The histogram of the span's scores: buckets of equal width between the lowest and the
        /// highest score (1 to 1000, default 10), or the buckets between ascending edges, the
        /// last one including its end: [e0, e1 − 1], …, [ek−1, ek]. Not both.
        /// </summary>
        public Task<Distribution> GetDistributionAsync(string board, int? buckets = null, IEnumerable<long> edges = null, string window = null, DateTimeOffset? at = null, string period = null, string cohort = null,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            var query = new Query().When(window, at, period, cohort).Add("buckets", buckets);
            if (edges != null) query.Add("edges", string.Join(",", edges.Select(e => e.ToString(CultureInfo.InvariantCulture))));
            return Request(HttpMethod.Get, "/v1/boards/" + Seg(board) + "/distribution", query, null, One(Distribution.Read), cancellationToken);
        }

        /// <summary>A calendar window's periods, newest first.</summary>
        public Task<IReadOnlyList<Period>> ListPeriodsAsync(string board, string window = null, CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Get, "/v1/boards/" + Seg(board) + "/periods", new Query().Add("window", window), null, ListOf("periods", Period.Read), cancellationToken);

        /// <summary>A closed period's rewarded members in rank order; 409 conflict while it may still change.</summary>
        public Task<PeriodResults> GetResultsAsync(string board, string period, string window = null, int? offset = null, int? limit = null,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            var query = new Query().Add("window", window).Add("offset", offset).Add("limit", limit);
            return Request(HttpMethod.Get, "/v1/boards/" + Seg(board) + "/periods/" + Seg(period) + "/results", query, null, One(PeriodResults.Read), cancellationToken);
        }

        /// <summary>The member's score and rank right after each of its events, newest first; with cohort (the member itself), within its cohorts.</summary>
        public Task<IReadOnlyList<HistoryPoint>> MemberHistoryAsync(string board, string member, string window = null, int? limit = null, string cohort = null,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            var query = new Query().Add("window", window).Add("limit", limit).Add("cohort", cohort);
            return Request(HttpMethod.Get, "/v1/boards/" + Seg(board) + "/members/" + Seg(member) + "/history", query, null, ListOf("points", HistoryPoint.Read), cancellationToken);
        }

        // Tournaments, cohorts and leagues

        /// <summary>Joins the run of a tournament taking events now; the same Entrant whether it joined now or was in already.</summary>
        public Task<Entrant> JoinTournamentAsync(string board, string member, CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Post, "/v1/boards/" + Seg(board) + "/members/" + Seg(member) + "/join", null, null, One(Entrant.Read), cancellationToken);

        public Task<Entrant> GetEntryAsync(string board, string member, CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Get, "/v1/boards/" + Seg(board) + "/members/" + Seg(member) + "/entry", null, null, One(Entrant.Read), cancellationToken);

        /// <summary>The member's cohort in the period read (now by default).</summary>
        public Task<Cohort> GetCohortAsync(string board, string member, string window = null, DateTimeOffset? at = null, string period = null,
            CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Get, "/v1/boards/" + Seg(board) + "/members/" + Seg(member) + "/cohort", new Query().When(window, at, period, null), null, One(Cohort.Read), cancellationToken);

        public Task<MemberTier> GetTierAsync(string board, string member, CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Get, "/v1/boards/" + Seg(board) + "/members/" + Seg(member) + "/tier", null, null, One(MemberTier.Read), cancellationToken);

        // Webhooks (admin)

        public Task<IReadOnlyList<Hook>> ListHooksAsync(CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Get, "/v1/hooks", null, null, ListOf("hooks", Hook.Read), cancellationToken);

        public Task<Hook> PutHookAsync(string hook, HookSpec spec, CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Put, "/v1/hooks/" + Seg(hook), null, (spec ?? new HookSpec()).ToJson(), One(Hook.Read), cancellationToken);

        public Task<Hook> GetHookAsync(string hook, CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Get, "/v1/hooks/" + Seg(hook), null, null, One(Hook.Read), cancellationToken);

        public Task DeleteHookAsync(string hook, CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Delete, "/v1/hooks/" + Seg(hook), null, null, nothing, cancellationToken);

        /// <param name="state">"pending", "delivered" or "failed"; null: all.</param>
        /// <param name="after">The last id of the previous page.</param>
        public Task<IReadOnlyList<Delivery>> ListDeliveriesAsync(string hook, string state = null, string after = null, int? limit = null,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            var query = new Query().Add("state", state).Add("after", after).Add("limit", limit);
            return Request(HttpMethod.Get, "/v1/hooks/" + Seg(hook) + "/deliveries", query, null, ListOf("deliveries", Delivery.Read), cancellationToken);
        }

        public Task<Delivery> GetDeliveryAsync(string hook, string delivery, CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Get, "/v1/hooks/" + Seg(hook) + "/deliveries/" + Seg(delivery), null, null, One(Delivery.Read), cancellationToken);

        /// <summary>Makes the delivery pending again with a fresh count of attempts: same id, same body.</summary>
        public Task<Delivery> ReplayDeliveryAsync(string hook, string delivery, CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Post, "/v1/hooks/" + Seg(hook) + "/deliveries/" + Seg(delivery) + "/replay", null, null, One(Delivery.Read), cancellationToken);

        // The review queue

        /// <summary>The game's anti-cheat holds a member for review (a key, not a member token).</summary>
        public Task<Flag> ReportFlagAsync(string board, string member, FlagReport report, CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Post, "/v1/boards/" + Seg(board) + "/members/" + Seg(member) + "/flags", null, (report ?? new FlagReport()).ToJson(), One(Flag.Read), cancellationToken);

        /// <param name="state">"open", "cleared" or "confirmed"; null: all.</param>
        public Task<IReadOnlyList<Flag>> ListFlagsAsync(string state = null, string board = null, string member = null, string after = null, int? limit = null,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            var query = new Query().Add("state", state).Add("board", board).Add("member", member).Add("after", after).Add("limit", limit);
            return Request(HttpMethod.Get, "/v1/flags", query, null, ListOf("flags", Flag.Read), cancellationToken);
        }

        public Task<Flag> GetFlagAsync(string flag, CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Get, "/v1/flags/" + Seg(flag), null, null, One(Flag.Read), cancellationToken);

        /// <summary>Clears or confirms a flag; again the same way answers it as it is.</summary>
        public Task<Flag> ResolveFlagAsync(string flag, FlagResolution resolution, CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Post, "/v1/flags/" + Seg(flag), null, (resolution ?? new FlagResolution()).ToJson(), One(Flag.Read), cancellationToken);

        // Members

        public Task<Profile> PutProfileAsync(string member, ProfileSpec spec, CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Put, "/v1/members/" + Seg(member), null, (spec ?? new ProfileSpec()).ToJson(), One(Profile.Read), cancellationToken);

        public Task<Profile> GetProfileAsync(string member, CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Get, "/v1/members/" + Seg(member), null, null, One(Profile.Read), cancellationToken);

        /// <summary>Erases the member everywhere (admin).</summary>
        public Task DeleteMemberAsync(string member, CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Delete, "/v1/members/" + Seg(member), null, null, nothing, cancellationToken);

        /// <summary>Leaves the member out of every ranking and total, keeping its data (admin).</summary>
        public Task<Visibility> HideMemberAsync(string member, CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Post, "/v1/members/" + Seg(member) + "/hide", null, null, One(Visibility.Read), cancellationToken);

        public Task<Visibility> UnhideMemberAsync(string member, CancellationToken cancellationToken = default(CancellationToken)) =>
            Request(HttpMethod.Post, "/v1/members/" + Seg(member) + "/unhide", null, null, One(Visibility.Read), cancellationToken);
    }
}
