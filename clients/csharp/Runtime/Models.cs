// The API's types (GET /openapi.json's schemas): each property is its JSON field in PascalCase,
// read and written by name here. A value-typed property is nullable exactly when the field is
// optional. Five schemas are named otherwise, since a C# type cannot have a member of its own
// name: Rank is ScoreRank, Tier MemberTier, Hidden Visibility, Status ServerStatus, Results
// PeriodResults. Enumerations (order, mode, status…) are strings, as in the API, so that a
// value a newer server adds reads as it is.
using System;
using System.Collections.Generic;
using System.Linq;

namespace Laurel
{
    /// <summary>A board's configuration to create or update (PUT). A property left null keeps its value (its default on create).</summary>
    public sealed class BoardSpec
    {
        /// <summary>"desc" (high is better, the default) or "asc".</summary>
        public string Order { get; set; }
        /// <summary>"asc" or "desc": ranks equal scores by each event's subscore, in this order (asc: the lower first). Set at creation only: a change is 409 conflict.</summary>
        public string Subscore { get; set; }
        /// <summary>"sum" (the default), "best" or "last".</summary>
        public string Mode { get; set; }
        /// <summary>all, hour, day, week, month, year, last&lt;N&gt;d or last&lt;N&gt;h; the first is what a read without a window reads.</summary>
        public IList<string> Windows { get; set; }
        /// <summary>An IANA zone name (default UTC).</summary>
        public string Timezone { get; set; }
        public string WeekStart { get; set; }
        /// <summary>A duration such as 90s, 1h or 7d (default 24h).</summary>
        public string LateLimit { get; set; }
        public int? Keep { get; set; }
        public long? MinValue { get; set; }
        public long? MaxValue { get; set; }
        public string Title { get; set; }
        public IDictionary<string, object> Metadata { get; set; }
        /// <summary>What the final ranks of closed periods earn; an empty list removes every rule.</summary>
        public IList<RewardRule> Rewards { get; set; }
        /// <summary>Makes the board a tournament; an empty TournamentSpec removes it.</summary>
        public TournamentSpec Tournament { get; set; }
        /// <summary>Splits each period of a window into cohorts; an empty CohortsSpec removes them.</summary>
        public CohortsSpec Cohorts { get; set; }
        /// <summary>What the board refuses as implausible before it ranks; an empty GuardSpec removes it.</summary>
        public GuardSpec Guard { get; set; }

        internal Dictionary<string, object> ToJson()
        {
            var o = new Dictionary<string, object>();
            Json.Put(o, "order", Order);
            Json.Put(o, "subscore", Subscore);
            Json.Put(o, "mode", Mode);
            Json.Put(o, "windows", Windows);
            Json.Put(o, "timezone", Timezone);
            Json.Put(o, "week_start", WeekStart);
            Json.Put(o, "late_limit", LateLimit);
            Json.Put(o, "keep", Keep);
            Json.Put(o, "min_value", MinValue);
            Json.Put(o, "max_value", MaxValue);
            Json.Put(o, "title", Title);
            Json.Put(o, "metadata", Metadata);
            if (Rewards != null) o["rewards"] = Rewards.Select(r => r.ToJson()).ToList();
            if (Tournament != null) o["tournament"] = Tournament.ToJson();
            if (Cohorts != null) o["cohorts"] = Cohorts.ToJson();
            if (Guard != null) o["guard"] = Guard.ToJson();
            return o;
        }
    }

    /// <summary>A reward by final rank (Ranks: [from, to]) or for the first Percent per cent, in a calendar window.</summary>
    public sealed class RewardRule
    {
        public string Window { get; set; }
        /// <summary>A league's tier whose cohorts it rewards; null: any.</summary>
        public string Tier { get; set; }
        /// <summary>[from, to], inclusive.</summary>
        public IList<int> Ranks { get; set; }
        public double? Percent { get; set; }
        /// <summary>Opaque to laurel: the game interprets it (values as <see cref="Entry.Metadata"/>).</summary>
        public IDictionary<string, object> Reward { get; set; }

        internal Dictionary<string, object> ToJson()
        {
            var o = new Dictionary<string, object>();
            Json.Put(o, "window", Window);
            Json.Put(o, "tier", Tier);
            Json.Put(o, "ranks", Ranks);
            Json.Put(o, "percent", Percent);
            Json.Put(o, "reward", Reward);
            return o;
        }

        internal static RewardRule Read(JsonObject o) => new RewardRule
        {
            Window = o.String("window"),
            Tier = o.String("tier"),
            Ranks = o.Ints("ranks"),
            Percent = o.DoubleOrNull("percent"),
            Reward = o.Free("reward"),
        };
    }

    /// <summary>Makes a board a tournament. Every property is optional; an update replaces the whole tournament.</summary>
    public sealed class TournamentSpec
    {
        public DateTimeOffset? Start { get; set; }
        public DateTimeOffset? End { get; set; }
        /// <summary>A calendar window whose periods are the runs (a daily tournament: day).</summary>
        public string Window { get; set; }
        /// <summary>Each run takes events for its first Duration only (a Go duration such as 20h).</summary>
        public string Duration { get; set; }
        public int? MaxMembers { get; set; }
        public bool? JoinRequired { get; set; }
        public int? MaxAttempts { get; set; }

        internal Dictionary<string, object> ToJson()
        {
            var o = new Dictionary<string, object>();
            Json.Put(o, "start", Start);
            Json.Put(o, "end", End);
            Json.Put(o, "window", Window);
            Json.Put(o, "duration", Duration);
            Json.Put(o, "max_members", MaxMembers);
            Json.Put(o, "join_required", JoinRequired);
            Json.Put(o, "max_attempts", MaxAttempts);
            return o;
        }

        internal static TournamentSpec Read(JsonObject o) => new TournamentSpec
        {
            Start = o.TimeOrNull("start"),
            End = o.TimeOrNull("end"),
            Window = o.String("window"),
            Duration = o.String("duration"),
            MaxMembers = o.IntOrNull("max_members"),
            JoinRequired = o.BoolOrNull("join_required"),
            MaxAttempts = o.IntOrNull("max_attempts"),
        };
    }

    /// <summary>Splits each period of a calendar window into cohorts of at most Size members; with Tiers, a league.</summary>
    public sealed class CohortsSpec
    {
        public string Window { get; set; }
        public int? Size { get; set; }
        /// <summary>metadata.&lt;field&gt;, or tier with tiers; null: everyone together.</summary>
        public string By { get; set; }
        /// <summary>A league's tiers, lowest first.</summary>
        public IList<string> Tiers { get; set; }
        public int? Promote { get; set; }
        public int? Demote { get; set; }
        public bool? DemoteAbsent { get; set; }

        internal Dictionary<string, object> ToJson()
        {
            var o = new Dictionary<string, object>();
            Json.Put(o, "window", Window);
            Json.Put(o, "size", Size);
            Json.Put(o, "by", By);
            Json.Put(o, "tiers", Tiers);
            Json.Put(o, "promote", Promote);
            Json.Put(o, "demote", Demote);
            Json.Put(o, "demote_absent", DemoteAbsent);
            return o;
        }

        internal static CohortsSpec Read(JsonObject o) => new CohortsSpec
        {
            Window = o.String("window"),
            Size = o.IntOrNull("size"),
            By = o.String("by"),
            Tiers = o.Strings("tiers"),
            Promote = o.IntOrNull("promote"),
            Demote = o.IntOrNull("demote"),
            DemoteAbsent = o.BoolOrNull("demote_absent"),
        };
    }

    /// <summary>A board's guard: an event that breaks a rule is refused (ErrorCodes.GuardRefused), nothing stored.</summary>
    public sealed class GuardSpec
    {
        /// <summary>Events only with a key: a member token's are refused.</summary>
        public bool? Trusted { get; set; }
        /// <summary>Any board: at most Max events of a member at times in any Interval ("1m") that ends at one of them.</summary>
        public RateRule Rate { get; set; }
        /// <summary>Sum boards: at most Max gained in a span of Window.</summary>
        public GuardRule Gain { get; set; }
        /// <summary>Best boards: a new best beats the previous one in a span of Window by at most Amount and/or Percent.</summary>
        public GuardRule Jump { get; set; }

        internal Dictionary<string, object> ToJson()
        {
            var o = new Dictionary<string, object>();
            Json.Put(o, "trusted", Trusted);
            if (Rate != null) o["rate"] = Rate.ToJson();
            if (Gain != null) o["gain"] = Gain.ToJson();
            if (Jump != null) o["jump"] = Jump.ToJson();
            return o;
        }

        internal static GuardSpec Read(JsonObject o) => new GuardSpec
        {
            Trusted = o.BoolOrNull("trusted"),
            Rate = o.One("rate", RateRule.Read),
            Gain = o.One("gain", GuardRule.Read),
            Jump = o.One("jump", GuardRule.Read),
        };
    }

    /// <summary>The rate rule of a guard: at most Max events of a member in any Interval.</summary>
    public sealed class RateRule
    {
        public long Max { get; set; }
        /// <summary>A duration of whole milliseconds, 1ms to 7d, such as "1m".</summary>
        public string Interval { get; set; }
        /// <summary>refuse (the default), or hold: the event stored, its member hidden and a flag opened.</summary>
        public string Action { get; set; }

        internal Dictionary<string, object> ToJson()
        {
            var o = new Dictionary<string, object>();
            Json.Put(o, "max", Max);
            Json.Put(o, "interval", Interval);
            Json.Put(o, "action", Action);
            return o;
        }

        internal static RateRule Read(JsonObject o) => new RateRule
        {
            Max = o.Long("max"),
            Interval = o.String("interval"),
            Action = o.String("action"),
        };
    }

    /// <summary>A rule of a guard, in one of the board's windows.</summary>
    public sealed class GuardRule
    {
        public string Window { get; set; }
        public long? Max { get; set; }
        public long? Amount { get; set; }
        public long? Percent { get; set; }
        /// <summary>refuse (the default), or hold: the event stored, its member hidden and a flag opened.</summary>
        public string Action { get; set; }

        internal Dictionary<string, object> ToJson()
        {
            var o = new Dictionary<string, object>();
            Json.Put(o, "window", Window);
            Json.Put(o, "max", Max);
            Json.Put(o, "amount", Amount);
            Json.Put(o, "percent", Percent);
            Json.Put(o, "action", Action);
            return o;
        }

        internal static GuardRule Read(JsonObject o) => new GuardRule
        {
            Window = o.String("window"),
            Max = o.LongOrNull("max"),
            Amount = o.LongOrNull("amount"),
            Percent = o.LongOrNull("percent"),
            Action = o.String("action"),
        };
    }

    /// <summary>A board: its configuration and, per window, the period a read now sees.</summary>
    public sealed class Board
    {
        public string Id { get; set; }
        public string Order { get; set; }
        /// <summary>The order of the board's second sort key ("asc" or "desc"); null when it has none.</summary>
        public string Subscore { get; set; }
        public string Mode { get; set; }
        public IReadOnlyList<string> Windows { get; set; }
        public string Timezone { get; set; }
        public string WeekStart { get; set; }
        public string LateLimit { get; set; }
        public int Keep { get; set; }
        public long? MinValue { get; set; }
        public long? MaxValue { get; set; }
        public string Title { get; set; }
        public IDictionary<string, object> Metadata { get; set; }
        public DateTimeOffset CreatedAt { get; set; }
        /// <summary>Per window: its current period and how many members it ranks.</summary>
        public IReadOnlyDictionary<string, CurrentPeriod> Current { get; set; }
        public IReadOnlyList<RewardRule> Rewards { get; set; }
        public TournamentSpec Tournament { get; set; }
        public CohortsSpec Cohorts { get; set; }
        public GuardSpec Guard { get; set; }

        internal static Board Read(JsonObject o) => new Board
        {
            Id = o.String("id"),
            Order = o.String("order"),
            Subscore = o.String("subscore"),
            Mode = o.String("mode"),
            Windows = o.Strings("windows"),
            Timezone = o.String("timezone"),
            WeekStart = o.String("week_start"),
            LateLimit = o.String("late_limit"),
            Keep = o.Int("keep"),
            MinValue = o.LongOrNull("min_value"),
            MaxValue = o.LongOrNull("max_value"),
            Title = o.String("title"),
            Metadata = o.Free("metadata"),
            CreatedAt = o.Time("created_at"),
            Current = o.Map("current", CurrentPeriod.Read),
            Rewards = o.List("rewards", RewardRule.Read),
            Tournament = o.One("tournament", TournamentSpec.Read),
            Cohorts = o.One("cohorts", CohortsSpec.Read),
            Guard = o.One("guard", GuardSpec.Read),
        };
    }

    /// <summary>
    /// A period of a window: a calendar period has an Id (2026-11-16 for a week), a rolling
    /// window's span only Start and End, all the Id "all".
    /// </summary>
    public sealed class Period
    {
        public string Id { get; set; }
        public DateTimeOffset? Start { get; set; }
        public DateTimeOffset? End { get; set; }
        public bool? Closed { get; set; }
        /// <summary>In period lists only.</summary>
        public int? Total { get; set; }

        internal static Period Read(JsonObject o) => new Period
        {
            Id = o.String("id"),
            Start = o.TimeOrNull("start"),
            End = o.TimeOrNull("end"),
            Closed = o.BoolOrNull("closed"),
            Total = o.IntOrNull("total"),
        };
    }

    public sealed class CurrentPeriod
    {
        public Period Period { get; set; }
        public int Total { get; set; }

        internal static CurrentPeriod Read(JsonObject o) => new CurrentPeriod
        {
            Period = o.One("period", Period.Read),
            Total = o.Int("total"),
        };
    }

    /// <summary>A score event. With retries on (the default) the client gives an event without an Id a random one before its first attempt.</summary>
    public sealed class Event
    {
        /// <summary>Only in a submission across boards (SubmitEventsAsync).</summary>
        public string Board { get; set; }
        public string Member { get; set; }
        public long Value { get; set; }
        /// <summary>On a board with a subscore only (400 elsewhere): the event's second sort key; null, 0.</summary>
        public long? Subscore { get; set; }
        /// <summary>The event's time; null: when laurel receives it (a member token's events must leave it null).</summary>
        public DateTimeOffset? Ts { get; set; }
        /// <summary>Makes the event idempotent and retractable.</summary>
        public string Id { get; set; }
        /// <summary>Sets the member's profile name in the same write (not with a member token).</summary>
        public string Name { get; set; }
        /// <summary>
        /// What the score was made with (a car, a replay id, a build): any JSON value of at most
        /// 256 bytes as compact JSON, as plain .NET values (a string, a long, a list, a
        /// dictionary…). Entries show the tag of the event that made their score.
        /// </summary>
        public object Tag { get; set; }

        internal Dictionary<string, object> ToJson()
        {
            var o = new Dictionary<string, object>();
            Json.Put(o, "board", Board);
            Json.Put(o, "member", Member);
            o["value"] = Value;
            Json.Put(o, "subscore", Subscore);
            Json.Put(o, "ts", Ts);
            Json.Put(o, "id", Id);
            Json.Put(o, "name", Name);
            Json.Put(o, "tag", Tag);
            return o;
        }
    }

    /// <summary>A rank and the score it is for.</summary>
    public sealed class Standing
    {
        public int Rank { get; set; }
        public long Score { get; set; }
        /// <summary>On a board with a subscore: the member's there; null on a board without.</summary>
        public long? Subscore { get; set; }
        /// <summary>In a write's answer: the standing there before the write (the whole batch);
        /// null where the member was not ranked there before, for a duplicate and for a hidden member.</summary>
        public PreviousStanding Previous { get; set; }

        internal static Standing Read(JsonObject o) => new Standing
        {
            Rank = o.Int("rank"),
            Score = o.Long("score"),
            Subscore = o.LongOrNull("subscore"),
            Previous = o.One("previous", PreviousStanding.Read),
        };
    }

    /// <summary>A member's rank and score before a write ("#12 → #5": the 12).</summary>
    public sealed class PreviousStanding
    {
        public int Rank { get; set; }
        public long Score { get; set; }
        /// <summary>On a board with a subscore.</summary>
        public long? Subscore { get; set; }

        internal static PreviousStanding Read(JsonObject o) => new PreviousStanding { Rank = o.Int("rank"), Score = o.Long("score"), Subscore = o.LongOrNull("subscore") };
    }

    /// <summary>What became of one submitted event.</summary>
    public sealed class EventResult
    {
        public string Member { get; set; }
        /// <summary>The event's id: its own, or the one the client gave it.</summary>
        public string Id { get; set; }
        /// <summary>"applied", or "duplicate" when the board had counted the id already.</summary>
        public string Status { get; set; }
        /// <summary>The flag that holds the event for review (a hold rule held it; its member is hidden); null if none.</summary>
        public string Flag { get; set; }
        /// <summary>Per window, the member's standing right after the write; null when submitted with ranks: false.</summary>
        public IReadOnlyDictionary<string, Standing> Entries { get; set; }

        internal static EventResult Read(JsonObject o) => new EventResult
        {
            Member = o.String("member"),
            Id = o.String("id"),
            Status = o.String("status"),
            Flag = o.String("flag"),
            Entries = o.Map("entries", Standing.Read),
        };
    }

    public sealed class Retracted
    {
        /// <summary>"retracted".</summary>
        public string Status { get; set; }

        internal static Retracted Read(JsonObject o) => new Retracted { Status = o.String("status") };
    }

    /// <summary>A member's place on a board.</summary>
    public sealed class Entry
    {
        public int Rank { get; set; }
        public string Member { get; set; }
        public long Score { get; set; }
        /// <summary>On a board with a subscore (and only there): the second sort key that goes with the score, 0 where the events carried none; null on a board without.</summary>
        public long? Subscore { get; set; }
        public DateTimeOffset ReachedAt { get; set; }
        /// <summary>
        /// In member, around and lookup reads: the share of the others ranked in the span that
        /// this entry beats, in percent, rounded down to hundredths (100 for the first, a
        /// member alone included; 0 for the last). Null in a page of the top.
        /// </summary>
        public double? Percentile { get; set; }
        /// <summary>When the member has one.</summary>
        public string Name { get; set; }
        /// <summary>The tag of the event that made the score (best: the best event's; last: the latest's; sum: the latest counted event's), when it carried one; as <see cref="Event.Tag"/>.</summary>
        public object Tag { get; set; }
        /// <summary>
        /// With metadata: true, when the member has some. Values as JSON has them: strings,
        /// bools, long (an integer) or double, lists of objects, dictionaries, null.
        /// </summary>
        public IDictionary<string, object> Metadata { get; set; }

        internal static Entry Read(JsonObject o) => new Entry
        {
            Rank = o.Int("rank"),
            Member = o.String("member"),
            Score = o.Long("score"),
            Subscore = o.LongOrNull("subscore"),
            ReachedAt = o.Time("reached_at"),
            Percentile = o.DoubleOrNull("percentile"),
            Name = o.String("name"),
            Tag = o.Any("tag"),
            Metadata = o.Free("metadata"),
        };
    }

    /// <summary>Consecutive entries of a window's period, and how many members it ranks.</summary>
    public sealed class Page
    {
        public string Board { get; set; }
        public string Window { get; set; }
        public Period Period { get; set; }
        public int Total { get; set; }
        public IReadOnlyList<Entry> Entries { get; set; }

        internal static Page Read(JsonObject o) => new Page
        {
            Board = o.String("board"),
            Window = o.String("window"),
            Period = o.One("period", Period.Read),
            Total = o.Int("total"),
            Entries = o.List("entries", Entry.Read),
        };
    }

    public sealed class MemberEntry
    {
        public string Board { get; set; }
        public string Window { get; set; }
        public Period Period { get; set; }
        public int Total { get; set; }
        public Entry Entry { get; set; }

        internal static MemberEntry Read(JsonObject o) => new MemberEntry
        {
            Board = o.String("board"),
            Window = o.String("window"),
            Period = o.One("period", Period.Read),
            Total = o.Int("total"),
            Entry = o.One("entry", Entry.Read),
        };
    }

    /// <summary>
    /// A span's score histogram, buckets in ascending score whatever the board's order. Total
    /// counts every member ranked, those outside given edges too.
    /// </summary>
    public sealed class Distribution
    {
        public string Board { get; set; }
        public string Window { get; set; }
        public Period Period { get; set; }
        public int Total { get; set; }
        public IReadOnlyList<Bucket> Buckets { get; set; }

        internal static Distribution Read(JsonObject o) => new Distribution
        {
            Board = o.String("board"),
            Window = o.String("window"),
            Period = o.One("period", Period.Read),
            Total = o.Int("total"),
            Buckets = o.List("buckets", Bucket.Read),
        };
    }

    /// <summary>How many members have a score from Min to Max, both included.</summary>
    public sealed class Bucket
    {
        public long Min { get; set; }
        public long Max { get; set; }
        public int Count { get; set; }

        internal static Bucket Read(JsonObject o) => new Bucket { Min = o.Long("min"), Max = o.Long("max"), Count = o.Int("count") };
    }

    /// <summary>One event of a member's live stream: its standing in one window's current period.</summary>
    public sealed class MemberStanding
    {
        public string Window { get; set; }
        public Period Period { get; set; }
        /// <summary>Members ranked in the period when the event was sent.</summary>
        public int Total { get; set; }
        /// <summary>Null while the member is not ranked in the period (not scored yet, hidden, erased).</summary>
        public int? Rank { get; set; }
        public long? Score { get; set; }
        /// <summary>With Rank, on a board with a subscore.</summary>
        public long? Subscore { get; set; }
        /// <summary>What the stream last sent for this window in the same period; null in the first events and a new period's first.</summary>
        public LastStanding Previous { get; set; }
        /// <summary>The member that passed it, when one member alone did.</summary>
        public Entry PassedBy { get; set; }
        /// <summary>The member it passed, when it passed one member alone.</summary>
        public Entry Passed { get; set; }

        internal static MemberStanding Read(JsonObject o) => new MemberStanding
        {
            Window = o.String("window"),
            Period = o.One("period", Period.Read),
            Total = o.Int("total"),
            Rank = o.IntOrNull("rank"),
            Score = o.LongOrNull("score"),
            Subscore = o.LongOrNull("subscore"),
            Previous = o.One("previous", LastStanding.Read),
            PassedBy = o.One("passed_by", Entry.Read),
            Passed = o.One("passed", Entry.Read),
        };
    }

    /// <summary>What a member's live stream last sent for a window, before this change; Rank and Score null when it was not ranked then.</summary>
    public sealed class LastStanding
    {
        public int? Rank { get; set; }
        public long? Score { get; set; }
        /// <summary>With Rank, on a board with a subscore.</summary>
        public long? Subscore { get; set; }

        internal static LastStanding Read(JsonObject o) => new LastStanding { Rank = o.IntOrNull("rank"), Score = o.LongOrNull("score"), Subscore = o.LongOrNull("subscore") };
    }

    /// <summary>The rank a member reaching a score now would get (schema Rank).</summary>
    public sealed class ScoreRank
    {
        public int Rank { get; set; }
        public int Total { get; set; }

        internal static ScoreRank Read(JsonObject o) => new ScoreRank { Rank = o.Int("rank"), Total = o.Int("total") };
    }

    /// <summary>A member's profile to set; a property left null keeps its value.</summary>
    public sealed class ProfileSpec
    {
        public string Name { get; set; }
        public IDictionary<string, object> Metadata { get; set; }

        internal Dictionary<string, object> ToJson()
        {
            var o = new Dictionary<string, object>();
            Json.Put(o, "name", Name);
            Json.Put(o, "metadata", Metadata);
            return o;
        }
    }

    public sealed class Profile
    {
        public string Member { get; set; }
        public string Name { get; set; }
        public IDictionary<string, object> Metadata { get; set; }
        public bool Hidden { get; set; }

        internal static Profile Read(JsonObject o) => new Profile
        {
            Member = o.String("member"),
            Name = o.String("name"),
            Metadata = o.Free("metadata"),
            Hidden = o.Bool("hidden"),
        };
    }

    /// <summary>Whether a member is left out of every ranking (schema Hidden).</summary>
    public sealed class Visibility
    {
        public string Member { get; set; }
        public bool Hidden { get; set; }

        internal static Visibility Read(JsonObject o) => new Visibility { Member = o.String("member"), Hidden = o.Bool("hidden") };
    }

    /// <summary>/healthz's and /readyz's answer (schema Status).</summary>
    public sealed class ServerStatus
    {
        public string Status { get; set; }

        internal static ServerStatus Read(JsonObject o) => new ServerStatus { Status = o.String("status") };
    }

    /// <summary>A member's score and rank right after one of its events.</summary>
    public sealed class HistoryPoint
    {
        public DateTimeOffset At { get; set; }
        public long Score { get; set; }
        /// <summary>On a board with a subscore: the member's right after the event; null on a board without.</summary>
        public long? Subscore { get; set; }
        public int Rank { get; set; }
        /// <summary>The event's own tag, when it carried one.</summary>
        public object Tag { get; set; }

        internal static HistoryPoint Read(JsonObject o) => new HistoryPoint { At = o.Time("at"), Score = o.Long("score"), Subscore = o.LongOrNull("subscore"), Rank = o.Int("rank"), Tag = o.Any("tag") };
    }

    /// <summary>What the client's key or member token may do.</summary>
    public sealed class Whoami
    {
        /// <summary>"read", "write" or "admin".</summary>
        public string Scope { get; set; }
        /// <summary>No key is configured on the server: anyone may do anything.</summary>
        public bool? Open { get; set; }
        /// <summary>A member token's member, boards and expiry.</summary>
        public string Member { get; set; }
        public IReadOnlyList<string> Boards { get; set; }
        public DateTimeOffset? ExpiresAt { get; set; }

        internal static Whoami Read(JsonObject o) => new Whoami
        {
            Scope = o.String("scope"),
            Open = o.BoolOrNull("open"),
            Member = o.String("member"),
            Boards = o.Strings("boards"),
            ExpiresAt = o.TimeOrNull("expires_at"),
        };
    }

    /// <summary>A rewarded member's final entry, with its reward.</summary>
    public sealed class Result
    {
        public int Rank { get; set; }
        public string Member { get; set; }
        public long Score { get; set; }
        /// <summary>On a board with a subscore (and only there): the second sort key that goes with the score, 0 where the events carried none; null on a board without.</summary>
        public long? Subscore { get; set; }
        public DateTimeOffset ReachedAt { get; set; }
        public string Name { get; set; }
        /// <summary>The tag of the event that made the final score, when it carried one.</summary>
        public object Tag { get; set; }
        public IDictionary<string, object> Metadata { get; set; }
        public IDictionary<string, object> Reward { get; set; }
        /// <summary>On a board with cohorts: the member's cohort, within which it is ranked.</summary>
        public string Cohort { get; set; }

        internal static Result Read(JsonObject o) => new Result
        {
            Rank = o.Int("rank"),
            Member = o.String("member"),
            Score = o.Long("score"),
            Subscore = o.LongOrNull("subscore"),
            ReachedAt = o.Time("reached_at"),
            Name = o.String("name"),
            Tag = o.Any("tag"),
            Metadata = o.Free("metadata"),
            Reward = o.Free("reward"),
            Cohort = o.String("cohort"),
        };
    }

    /// <summary>A closed period's rewarded members (schema Results); a webhook delivery's body is one part of them, with its delivery fields.</summary>
    public sealed class PeriodResults
    {
        /// <summary>Deliveries only: "period.results".</summary>
        public string Type { get; set; }
        public string Delivery { get; set; }
        public string Hook { get; set; }
        public int? Part { get; set; }
        public int? Parts { get; set; }
        public string Board { get; set; }
        public string Window { get; set; }
        public Period Period { get; set; }
        /// <summary>Members ranked in the period.</summary>
        public int Total { get; set; }
        /// <summary>Members the rules reward.</summary>
        public int Rewarded { get; set; }
        public IReadOnlyList<Result> Results { get; set; }

        internal static PeriodResults Read(JsonObject o) => new PeriodResults
        {
            Type = o.String("type"),
            Delivery = o.String("delivery"),
            Hook = o.String("hook"),
            Part = o.IntOrNull("part"),
            Parts = o.IntOrNull("parts"),
            Board = o.String("board"),
            Window = o.String("window"),
            Period = o.One("period", Period.Read),
            Total = o.Int("total"),
            Rewarded = o.Int("rewarded"),
            Results = o.List("results", Result.Read),
        };
    }

    /// <summary>A webhook to create or update; a property left null keeps its value.</summary>
    public sealed class HookSpec
    {
        /// <summary>http or https; each delivery is POSTed to it.</summary>
        public string Url { get; set; }
        /// <summary>Signs each delivery (16 to 256 bytes); never shown back.</summary>
        public string Secret { get; set; }
        /// <summary>The boards it hears of; empty: every board.</summary>
        public IList<string> Boards { get; set; }
        /// <summary>Also tell it of flags: opened, holding more events, resolved.</summary>
        public bool? Flags { get; set; }

        internal Dictionary<string, object> ToJson()
        {
            var o = new Dictionary<string, object>();
            Json.Put(o, "url", Url);
            Json.Put(o, "secret", Secret);
            Json.Put(o, "boards", Boards);
            Json.Put(o, "flags", Flags);
            return o;
        }
    }

    public sealed class Hook
    {
        public string Id { get; set; }
        public string Url { get; set; }
        public IReadOnlyList<string> Boards { get; set; }
        public bool Flags { get; set; }
        public DateTimeOffset CreatedAt { get; set; }

        internal static Hook Read(JsonObject o) => new Hook
        {
            Id = o.String("id"),
            Url = o.String("url"),
            Boards = o.Strings("boards"),
            Flags = o.Bool("flags"),
            CreatedAt = o.Time("created_at"),
        };
    }

    /// <summary>An event a hold rule held.</summary>
    public sealed class FlagEvent
    {
        public string Rule { get; set; }
        /// <summary>The event's id, when it has one.</summary>
        public string Id { get; set; }
        public long Value { get; set; }
        public DateTimeOffset Ts { get; set; }

        internal static FlagEvent Read(JsonObject o) => new FlagEvent
        {
            Rule = o.String("rule"),
            Id = o.String("id"),
            Value = o.Long("value"),
            Ts = o.Time("ts"),
        };
    }

    /// <summary>A member held for review on a board: by a hold rule of its guard, or by the game.</summary>
    public sealed class Flag
    {
        public string Id { get; set; }
        public string Board { get; set; }
        public string Member { get; set; }
        /// <summary>The rule that opened it; null for a report.</summary>
        public string Rule { get; set; }
        /// <summary>The game's reason, for a report.</summary>
        public string Reason { get; set; }
        /// <summary>"open", "cleared" or "confirmed".</summary>
        public string State { get; set; }
        public DateTimeOffset Opened { get; set; }
        public DateTimeOffset? Resolved { get; set; }
        public bool? Erased { get; set; }
        public IReadOnlyList<FlagEvent> Events { get; set; }

        internal static Flag Read(JsonObject o) => new Flag
        {
            Id = o.String("id"),
            Board = o.String("board"),
            Member = o.String("member"),
            Rule = o.String("rule"),
            Reason = o.String("reason"),
            State = o.String("state"),
            Opened = o.Time("opened"),
            Resolved = o.TimeOrNull("resolved"),
            Erased = o.BoolOrNull("erased"),
            Events = o.List("events", FlagEvent.Read),
        };
    }

    public sealed class FlagReport
    {
        /// <summary>What the game's anti-cheat saw (1 to 512 bytes).</summary>
        public string Reason { get; set; }

        internal Dictionary<string, object> ToJson()
        {
            var o = new Dictionary<string, object>();
            Json.Put(o, "reason", Reason);
            return o;
        }
    }

    public sealed class FlagResolution
    {
        /// <summary>"clear": the member back, its events stand; "confirm": the flagged events retracted, the member kept hidden.</summary>
        public string Action { get; set; }
        /// <summary>With confirm: erase the member everywhere.</summary>
        public bool? Erase { get; set; }

        internal Dictionary<string, object> ToJson()
        {
            var o = new Dictionary<string, object>();
            Json.Put(o, "action", Action);
            Json.Put(o, "erase", Erase);
            return o;
        }
    }

    /// <summary>One part of a closed period's results, or a flag's notice, posted to a hook until it answers 2xx.</summary>
    public sealed class Delivery
    {
        /// <summary>hook:board:window:period:part; sent as Laurel-Delivery.</summary>
        public string Id { get; set; }
        public string Hook { get; set; }
        public string Board { get; set; }
        public string Window { get; set; }
        public string Period { get; set; }
        public int Part { get; set; }
        public int Parts { get; set; }
        /// <summary>"pending", "delivered" or "failed".</summary>
        public string State { get; set; }
        public int Attempts { get; set; }
        public DateTimeOffset? NextAttemptAt { get; set; }
        public int? LastStatus { get; set; }
        public string LastError { get; set; }
        public DateTimeOffset CreatedAt { get; set; }
        public DateTimeOffset? DeliveredAt { get; set; }
        /// <summary>What it posts (GetDeliveryAsync only): a PeriodResults, or a FlagNotice for a flag's delivery.</summary>
        public object Body { get; set; }

        internal static Delivery Read(JsonObject o) => new Delivery
        {
            Id = o.String("id"),
            Hook = o.String("hook"),
            Board = o.String("board"),
            Window = o.String("window"),
            Period = o.String("period"),
            Part = o.Int("part"),
            Parts = o.Int("parts"),
            State = o.String("state"),
            Attempts = o.Int("attempts"),
            NextAttemptAt = o.TimeOrNull("next_attempt_at"),
            LastStatus = o.IntOrNull("last_status"),
            LastError = o.String("last_error"),
            CreatedAt = o.Time("created_at"),
            DeliveredAt = o.TimeOrNull("delivered_at"),
            Body = o.One("body", ReadBody),
        };

        // ReadBody tells a flag's notice from a part of results by its type.
        static object ReadBody(JsonObject o)
        {
            var type = o.String("type");
            if (type != null && type.StartsWith("flag.", StringComparison.Ordinal)) return FlagNotice.Read(o);
            return PeriodResults.Read(o);
        }
    }

    /// <summary>A webhook delivery's body for a hook that asks for flags: what a write did to a flag of the review queue.</summary>
    public sealed class FlagNotice
    {
        /// <summary>"flag.opened", "flag.held" or "flag.resolved".</summary>
        public string Type { get; set; }
        /// <summary>The delivery's id: apply each once.</summary>
        public string Delivery { get; set; }
        public string Hook { get; set; }
        public Flag Flag { get; set; }

        internal static FlagNotice Read(JsonObject o) => new FlagNotice
        {
            Type = o.String("type"),
            Delivery = o.String("delivery"),
            Hook = o.String("hook"),
            Flag = o.One("flag", Flag.Read),
        };
    }

    /// <summary>A member's entry in the run of a tournament taking events now.</summary>
    public sealed class Entrant
    {
        public string Board { get; set; }
        public string Member { get; set; }
        public Run Run { get; set; }
        public bool Joined { get; set; }
        public DateTimeOffset? JoinedAt { get; set; }
        public int Attempts { get; set; }
        public int? MaxAttempts { get; set; }
        /// <summary>Members in the run, when it has a cap.</summary>
        public int? Members { get; set; }
        public int? MaxMembers { get; set; }

        internal static Entrant Read(JsonObject o) => new Entrant
        {
            Board = o.String("board"),
            Member = o.String("member"),
            Run = o.One("run", Run.Read),
            Joined = o.Bool("joined"),
            JoinedAt = o.TimeOrNull("joined_at"),
            Attempts = o.Int("attempts"),
            MaxAttempts = o.IntOrNull("max_attempts"),
            Members = o.IntOrNull("members"),
            MaxMembers = o.IntOrNull("max_members"),
        };
    }

    /// <summary>A run of a tournament: a period of its window, or "all"; End is when it stops taking events.</summary>
    public sealed class Run
    {
        public string Id { get; set; }
        public DateTimeOffset? Start { get; set; }
        public DateTimeOffset? End { get; set; }

        internal static Run Read(JsonObject o) => new Run { Id = o.String("id"), Start = o.TimeOrNull("start"), End = o.TimeOrNull("end") };
    }

    /// <summary>A member's cohort in one period.</summary>
    public sealed class Cohort
    {
        public string Board { get; set; }
        public string Window { get; set; }
        public string Period { get; set; }
        /// <summary>&lt;key&gt;/&lt;n&gt;: the n-th cohort of the placement key.</summary>
        public string Id { get; set; }
        public string Key { get; set; }
        /// <summary>In order of placement.</summary>
        public IReadOnlyList<string> Members { get; set; }

        internal static Cohort Read(JsonObject o) => new Cohort
        {
            Board = o.String("board"),
            Window = o.String("window"),
            Period = o.String("period"),
            Id = o.String("id"),
            Key = o.String("key"),
            Members = o.Strings("members"),
        };
    }

    /// <summary>A league member's move at a period's close.</summary>
    public sealed class TierMove
    {
        public string Period { get; set; }
        public string From { get; set; }
        public string To { get; set; }
        /// <summary>When the member played: its cohort, its rank there, and of how many.</summary>
        public string Cohort { get; set; }
        public int? Rank { get; set; }
        public int? Of { get; set; }

        internal static TierMove Read(JsonObject o) => new TierMove
        {
            Period = o.String("period"),
            From = o.String("from"),
            To = o.String("to"),
            Cohort = o.String("cohort"),
            Rank = o.IntOrNull("rank"),
            Of = o.IntOrNull("of"),
        };
    }

    /// <summary>A member's league tier, and its moves, newest first (schema Tier).</summary>
    public sealed class MemberTier
    {
        public string Board { get; set; }
        public string Member { get; set; }
        public string Tier { get; set; }
        public IReadOnlyList<TierMove> Moves { get; set; }

        internal static MemberTier Read(JsonObject o) => new MemberTier
        {
            Board = o.String("board"),
            Member = o.String("member"),
            Tier = o.String("tier"),
            Moves = o.List("moves", TierMove.Read),
        };
    }
}
