// The client against a real laurel, started by csharp_test.go beside this file (go test
// ./clients/csharp/...), which compiles this program with the library, the README's Unity
// example and UnityStubs.cs, and passes laurel's URL, admin key and token secret. Arguments,
// if any, run only the tests whose names contain one of them.
using System;
using System.Collections;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.IO;
using System.Linq;
using System.Net;
using System.Net.Http;
using System.Net.Sockets;
using System.Reflection;
using System.Text;
using System.Threading;
using System.Threading.Tasks;
using Laurel;
using UnityEngine.UI;

static class Tests
{
    static string url, key, tokenKid, tokenSecret;
    static LaurelClient client;
    static int boards;

    static int Main(string[] args)
    {
        url = Environment.GetEnvironmentVariable("LAUREL_URL");
        key = Environment.GetEnvironmentVariable("LAUREL_ADMIN_KEY");
        tokenKid = Environment.GetEnvironmentVariable("LAUREL_TOKEN_KID");
        tokenSecret = Environment.GetEnvironmentVariable("LAUREL_TOKEN_SECRET");
        if (url == null || key == null || tokenSecret == null)
        {
            Console.Error.WriteLine("run by `go test ./clients/csharp/...`, which starts laurel and sets LAUREL_URL, LAUREL_ADMIN_KEY and LAUREL_TOKEN_SECRET");
            return 2;
        }
        client = new LaurelClient(url, key);
        var tests = new Dictionary<string, Func<Task>>
        {
            ["every operation of the OpenAPI file is a method, with its parameters"] = EveryOperation,
            ["every schema of the OpenAPI file is a type with its fields, required as there"] = EverySchema,
            ["each type reads and writes its fields by their JSON names"] = FieldsByName,
            ["a board's life: write, read every way, retract, delete"] = BoardLife,
            ["a subscore breaks ties: equal times, the fewer penalties first"] = Subscores,
            ["rewards, results and webhooks"] = RewardsAndHooks,
            ["a lap too good is held for review; confirmed, the board is as if it never happened"] = FlagsReview,
            ["errors carry the API's code, status and field"] = Errors,
            ["a retry after a lost answer reuses the event ids: counted once"] = LostAnswer,
            ["retries give up after the configured number; what a retry cannot mend is not retried"] = RetriesGiveUp,
            ["an attempt that gets no answer times out and is retried; a cancelled call ends at once"] = TimeoutAndCancel,
            ["free-form JSON (metadata) goes and comes back exactly"] = FreeFormJson,
            ["the live page: the current page, then each change, on the caller's thread"] = LivePage,
            ["the live page ends with not_found when its board is deleted"] = LivePageEnds,
            ["a member's live standing: its rank now, then who passed it"] = LiveMemberStanding,
            ["the live page connects again when its connection goes quiet, and sends its options"] = LivePageQuiet,
            ["the live page backs off while its connections end without a page"] = LivePageBacksOff,
            ["the live page waits as Retry-After says, at most MaxDelay"] = LivePageRetryAfter,
            ["a game client with a member token submits its own member's events and nothing else"] = MemberTokens,
            ["ids that cannot stand in a URL's path are refused before sending"] = PathIds,
            ["an answer that is not laurel's JSON gets the API's code for its status"] = NotLaurels,
            ["the README's Unity example shows the player's rank and neighbours, a run sent twice counted once"] = UnityExample,
        };
        int passed = 0, failed = 0;
        foreach (var test in tests)
        {
            if (args.Length > 0 && !args.Any(a => test.Key.Contains(a))) continue;
            var clock = Stopwatch.StartNew();
            try
            {
                var run = test.Value();
                if (Task.WhenAny(run, Task.Delay(TimeSpan.FromSeconds(30))).Result != run) throw new TimeoutException("not done within 30 s");
                run.GetAwaiter().GetResult();
                passed++;
                Console.WriteLine("ok   {0} ({1} ms)", test.Key, clock.ElapsedMilliseconds);
            }
            catch (Exception e)
            {
                failed++;
                Console.WriteLine("FAIL {0} ({1} ms)\n     {2}", test.Key, clock.ElapsedMilliseconds, e.ToString().Replace("\n", "\n     "));
            }
        }
        Console.WriteLine("{0} passed, {1} failed", passed, failed);
        return failed == 0 && passed > 0 ? 0 : 1;
    }

    static async Task<string> NewBoard(BoardSpec spec = null)
    {
        var id = "cs-" + Process.GetCurrentProcess().Id + "-" + Interlocked.Increment(ref boards);
        await client.PutBoardAsync(id, spec ?? new BoardSpec { Windows = new[] { "all", "day", "last7d" } });
        return id;
    }

    // The API's description, as the tests below read it.

    static async Task<IDictionary<string, object>> OpenApi() => await client.OpenapiAsync();

    static IDictionary<string, object> Obj(object v, string key) => (IDictionary<string, object>)((IDictionary<string, object>)v)[key];

    static IDictionary<string, object> Schemas(IDictionary<string, object> api) => Obj(Obj(api, "components"), "schemas");

    // Resolve follows a local $ref.
    static IDictionary<string, object> Resolve(IDictionary<string, object> api, IDictionary<string, object> v)
    {
        while (v.TryGetValue("$ref", out var r))
        {
            object cur = api;
            foreach (var part in ((string)r).Substring(2).Split('/')) cur = ((IDictionary<string, object>)cur)[part];
            v = (IDictionary<string, object>)cur;
        }
        return v;
    }

    static string Pascal(string snake) => string.Concat(snake.Split('_').Select(w => char.ToUpperInvariant(w[0]) + w.Substring(1)));

    static string Camel(string snake)
    {
        var p = Pascal(snake);
        return char.ToLowerInvariant(p[0]) + p.Substring(1);
    }

    static string Snake(string pascal) => string.Concat(pascal.Select((c, i) => char.IsUpper(c) ? (i > 0 ? "_" : "") + char.ToLowerInvariant(c) : c.ToString()));

    // Schemas the client has no type for: it unwraps them, or builds them from a method's
    // parameters, or throws them.
    static readonly Dictionary<string, string> unwrapped = new Dictionary<string, string>
    {
        ["Error"] = "a LaurelException",
        ["BoardList"] = "ListBoardsAsync returns the boards",
        ["EventBatch"] = "the submits take the events",
        ["EventSubmit"] = "the submits take the events",
        ["EventResults"] = "the submits return the results",
        ["PeriodList"] = "ListPeriodsAsync returns the periods",
        ["History"] = "MemberHistoryAsync returns the points",
        ["HookList"] = "ListHooksAsync returns the hooks",
        ["DeliveryList"] = "ListDeliveriesAsync returns the deliveries",
        ["FlagList"] = "ListFlagsAsync returns the flags",
        ["LookupRequest"] = "LookupAsync's parameters",
    };

    // Schemas whose type is named otherwise: a C# type cannot have a member of its own name.
    static readonly Dictionary<string, Type> renamed = new Dictionary<string, Type>
    {
        ["Rank"] = typeof(ScoreRank),
        ["Tier"] = typeof(MemberTier),
        ["Hidden"] = typeof(Visibility),
        ["Status"] = typeof(ServerStatus),
        ["Results"] = typeof(PeriodResults),
    };

    static Type TypeOf(string schema) => renamed.TryGetValue(schema, out var t) ? t : typeof(LaurelClient).Assembly.GetType("Laurel." + schema);

    static async Task EveryOperation()
    {
        var api = await OpenApi();
        var methods = typeof(LaurelClient).GetMethods(BindingFlags.Public | BindingFlags.Instance | BindingFlags.DeclaredOnly).Where(m => m.Name.EndsWith("Async")).ToList();
        var operations = new HashSet<string>();
        // Parameters the client takes otherwise: the stream's key goes in the header, as every
        // call's does; a rank has no entries to show metadata of.
        var otherwise = new HashSet<string> { "streamPage.key", "streamMember.key", "getRank.metadata" };
        foreach (var path in Obj(api, "paths"))
        {
            var ops = (IDictionary<string, object>)path.Value;
            var common = ops.TryGetValue("parameters", out var c) ? (List<object>)c : new List<object>();
            foreach (var op in ops)
            {
                if (!(op.Value is IDictionary<string, object> o) || !o.TryGetValue("operationId", out var id)) continue;
                var name = char.ToUpperInvariant(((string)id)[0]) + ((string)id).Substring(1) + "Async";
                operations.Add(name);
                var where = op.Key.ToUpperInvariant() + " " + path.Key;
                var overloads = methods.Where(m => m.Name == name).ToList();
                Assert.True(overloads.Count > 0, where + ": no method " + name);
                var parameters = common.Concat(o.TryGetValue("parameters", out var p) ? (List<object>)p : new List<object>())
                    .Select(x => Resolve(api, (IDictionary<string, object>)x));
                foreach (var m in overloads)
                {
                    Assert.True(typeof(Task).IsAssignableFrom(m.ReturnType), name + " returns a Task");
                    var last = m.GetParameters().Last();
                    Assert.True(last.ParameterType == typeof(CancellationToken) && last.Name == "cancellationToken" && last.IsOptional, name + " takes an optional cancellationToken last");
                    foreach (var parameter in parameters)
                    {
                        var pname = (string)parameter["name"];
                        if (otherwise.Contains(id + "." + pname)) continue;
                        Assert.True(m.GetParameters().Any(x => x.Name == Camel(pname)), name + ": no parameter " + Camel(pname) + " for " + parameter["in"] + " parameter " + pname);
                    }
                }
            }
        }
        Assert.Equal("", string.Join(", ", methods.Select(m => m.Name).Distinct().Where(m => !operations.Contains(m))), "methods that are no operation of the API");
    }

    static async Task EverySchema()
    {
        var api = await OpenApi();
        foreach (var schema in Schemas(api))
        {
            if (unwrapped.ContainsKey(schema.Key)) continue;
            var type = TypeOf(schema.Key);
            Assert.True(type != null && type.IsPublic, "no public type for schema " + schema.Key);
            CheckFields(api, type, (IDictionary<string, object>)schema.Value, schema.Key);
        }
        var error = Obj(Obj(Obj(Schemas(api), "Error"), "properties"), "error");
        foreach (var field in Obj(error, "properties").Keys)
        {
            Assert.True(typeof(LaurelException).GetProperty(Pascal(field)) != null, "LaurelException has no " + Pascal(field));
        }
        var codes = ((List<object>)Obj(Obj(error, "properties"), "code")["enum"]).Cast<string>().OrderBy(x => x, StringComparer.Ordinal);
        var declared = typeof(ErrorCodes).GetFields().Select(f => (string)f.GetValue(null)).OrderBy(x => x, StringComparer.Ordinal);
        Assert.Equal(string.Join(" ", codes), string.Join(" ", declared), "ErrorCodes");
        var lookup = typeof(LaurelClient).GetMethod("LookupAsync").GetParameters().Select(x => x.Name).ToList();
        foreach (var field in Obj(Obj(Schemas(api), "LookupRequest"), "properties").Keys) Assert.True(lookup.Contains(field), "LookupAsync has no parameter " + field);
    }

    // CheckFields checks that type has a property for each field of schema, of its type, a
    // value type nullable exactly when the field is optional, and no other.
    static void CheckFields(IDictionary<string, object> api, Type type, IDictionary<string, object> schema, string where)
    {
        var fields = Obj(schema, "properties");
        var required = schema.TryGetValue("required", out var r) ? ((List<object>)r).Cast<string>().ToList() : new List<string>();
        var props = type.GetProperties(BindingFlags.Public | BindingFlags.Instance).Select(x => x.Name).OrderBy(x => x, StringComparer.Ordinal);
        Assert.Equal(string.Join(" ", fields.Keys.Select(Pascal).OrderBy(x => x, StringComparer.Ordinal)), string.Join(" ", props), where + ": properties");
        foreach (var field in fields)
        {
            var prop = type.GetProperty(Pascal(field.Key));
            var spec = (IDictionary<string, object>)field.Value;
            var t = prop.PropertyType;
            var optional = !required.Contains(field.Key);
            var what = where + "." + field.Key;
            if (t.IsValueType)
            {
                var nullable = Nullable.GetUnderlyingType(t) != null;
                Assert.True(nullable == optional, what + ": " + t.Name + ", but " + (optional ? "optional" : "required") + " in the OpenAPI file");
                t = Nullable.GetUnderlyingType(t) ?? t;
            }
            CheckType(api, t, spec, what);
        }
    }

    static void CheckType(IDictionary<string, object> api, Type t, IDictionary<string, object> spec, string what)
    {
        if (spec.TryGetValue("$ref", out var r))
        {
            var name = ((string)r).Split('/').Last();
            Assert.True(t == TypeOf(name), what + ": " + t.Name + ", not " + name);
            return;
        }
        if (spec.TryGetValue("oneOf", out var alternatives))
        {
            // One of several types: an object holding the one it is, each a type here.
            Assert.True(t == typeof(object), what + ": " + t.Name + ", not one of several types");
            foreach (IDictionary<string, object> a in (List<object>)alternatives)
            {
                var name = ((string)a["$ref"]).Split('/').Last();
                Assert.True(TypeOf(name) != null, what + ": no type for " + name);
            }
            return;
        }
        var kind = spec.TryGetValue("type", out var k) ? (string)k : null;
        var format = spec.TryGetValue("format", out var f) ? (string)f : null;
        if (kind == null && !spec.ContainsKey("properties"))
        {
            Assert.True(t == typeof(object), what + ": " + t.Name + ", not any JSON value"); // a tag
            return;
        }
        switch (kind)
        {
            case "string":
                Assert.True(t == (format == "date-time" ? typeof(DateTimeOffset) : typeof(string)), what + ": " + t.Name + ", not " + (format ?? kind));
                break;
            case "integer":
                Assert.True(t == (format == "int64" ? typeof(long) : typeof(int)), what + ": " + t.Name + ", not " + (format ?? kind));
                break;
            case "number":
                Assert.True(t == typeof(double), what + ": " + t.Name + ", not a number");
                break;
            case "boolean":
                Assert.True(t == typeof(bool), what + ": " + t.Name + ", not a boolean");
                break;
            case "array":
                var item = Element(t, typeof(IList<>)) ?? Element(t, typeof(IReadOnlyList<>));
                Assert.True(item != null, what + ": " + t.Name + ", not a list");
                CheckType(api, item, (IDictionary<string, object>)spec["items"], what + "[]");
                break;
            case "object":
                if (spec.TryGetValue("properties", out _))
                {
                    CheckFields(api, t, spec, what);
                }
                else if (spec["additionalProperties"] is IDictionary<string, object> values)
                {
                    var value = Element(t, typeof(IReadOnlyDictionary<,>), 1);
                    Assert.True(value != null, what + ": " + t.Name + ", not a map");
                    CheckType(api, value, values, what + "{}");
                }
                else
                {
                    Assert.True(t == typeof(IDictionary<string, object>), what + ": " + t.Name + ", not free-form JSON");
                }
                break;
            default:
                throw new Exception(what + ": a field of no type");
        }
    }

    // Element is generic's type argument n of t, t being or implementing generic.
    static Type Element(Type t, Type generic, int n = 0)
    {
        var all = new[] { t }.Concat(t.GetInterfaces());
        var match = all.FirstOrDefault(i => i.IsGenericType && i.GetGenericTypeDefinition() == generic);
        return match?.GetGenericArguments()[n];
    }

    static async Task FieldsByName()
    {
        var api = await OpenApi();
        var read = 0;
        var written = 0;
        foreach (var schema in Schemas(api))
        {
            if (unwrapped.ContainsKey(schema.Key)) continue;
            var type = TypeOf(schema.Key);
            var spec = (IDictionary<string, object>)schema.Value;
            var reader = type.GetMethod("Read", BindingFlags.NonPublic | BindingFlags.Static);
            if (reader != null)
            {
                // A JSON object with every field of the schema, each value its own, decoded:
                // each property holds its field's value.
                var n = 0;
                var sample = Sample(api, spec, ref n);
                var value = reader.Invoke(null, new object[] { JsonObject.Of(sample, schema.Key) });
                Assert.Equal(Canon(sample), Canon(Normal(value)), schema.Key + " read from JSON");
                read++;
            }
            var writer = type.GetMethod("ToJson", BindingFlags.NonPublic | BindingFlags.Instance);
            if (writer != null)
            {
                // Every property set, each to its own value, encoded: each field holds its
                // property's value, and there is a field for each.
                var n = 0;
                var value = Build(type, ref n);
                var json = Json.Parse(Json.Serialize(writer.Invoke(value, null)));
                Assert.Equal(Canon(Normal(value)), Canon(json), schema.Key + " written as JSON");
                Assert.Equal(string.Join(" ", Obj(spec, "properties").Keys.OrderBy(x => x, StringComparer.Ordinal)),
                    string.Join(" ", ((IDictionary<string, object>)json).Keys.OrderBy(x => x, StringComparer.Ordinal)), schema.Key + " written: its fields");
                written++;
            }
            Assert.True(reader != null || writer != null, schema.Key + " is neither read nor written");
        }
        Assert.True(read >= 25 && written >= 7, "read " + read + " types, wrote " + written);
    }

    static readonly DateTimeOffset epoch = new DateTimeOffset(2026, 11, 22, 10, 0, 0, TimeSpan.Zero);

    // Sample is a JSON value for spec in which every field is set, each to a value of its own.
    static object Sample(IDictionary<string, object> api, IDictionary<string, object> spec, ref int n)
    {
        spec = Resolve(api, spec);
        if (spec.TryGetValue("oneOf", out var alternatives)) spec = Resolve(api, (IDictionary<string, object>)((List<object>)alternatives)[0]);
        n++;
        var kind = spec.TryGetValue("type", out var k) ? (string)k : null;
        var format = spec.TryGetValue("format", out var f) ? (string)f : null;
        if (kind == null && !spec.ContainsKey("properties")) return "s" + n; // any JSON value: a tag
        switch (kind)
        {
            case "string": return format == "date-time" ? Json.Time(epoch.AddSeconds(n)) : "s" + n;
            case "integer": return (long)n;
            case "number": return n + 0.5;
            case "boolean": return true;
            case "array": return new List<object> { Sample(api, (IDictionary<string, object>)spec["items"], ref n) };
        }
        var o = new Dictionary<string, object>();
        if (spec.TryGetValue("properties", out var props))
        {
            foreach (var p in (IDictionary<string, object>)props) o[p.Key] = Sample(api, (IDictionary<string, object>)p.Value, ref n);
        }
        else if (spec["additionalProperties"] is IDictionary<string, object> values)
        {
            o["k" + n] = Sample(api, values, ref n);
        }
        else
        {
            o["k" + n] = "v" + n;
        }
        return o;
    }

    // Build is a type's value with every property set, each to a value of its own.
    static object Build(Type t, ref int n)
    {
        n++;
        t = Nullable.GetUnderlyingType(t) ?? t;
        if (t == typeof(string)) return "s" + n;
        if (t == typeof(int)) return n;
        if (t == typeof(long)) return (long)n;
        if (t == typeof(double)) return n + 0.5;
        if (t == typeof(bool)) return true;
        if (t == typeof(DateTimeOffset)) return epoch.AddSeconds(n);
        if (t == typeof(IDictionary<string, object>)) return new Dictionary<string, object> { ["k" + n] = "v" + n };
        if (t == typeof(object)) return "s" + n; // any JSON value: a tag
        var item = Element(t, typeof(IList<>));
        if (item != null)
        {
            var list = (IList)Activator.CreateInstance(typeof(List<>).MakeGenericType(item));
            list.Add(Build(item, ref n));
            return list;
        }
        var value = Activator.CreateInstance(t);
        foreach (var p in t.GetProperties()) p.SetValue(value, Build(p.PropertyType, ref n));
        return value;
    }

    // Normal is a model's value as JSON values: each property that is set under its name in
    // snake case, times as laurel writes them.
    static object Normal(object v)
    {
        if (v == null || v is string || v is bool || v is double) return v;
        if (v is int || v is long) return Convert.ToInt64(v);
        if (v is DateTimeOffset t) return Json.Time(t);
        if (v is IDictionary d)
        {
            var o = new Dictionary<string, object>();
            foreach (DictionaryEntry e in d) o[(string)e.Key] = Normal(e.Value);
            return o;
        }
        if (v is IEnumerable list) return list.Cast<object>().Select(Normal).ToList();
        var fields = new Dictionary<string, object>();
        foreach (var p in v.GetType().GetProperties())
        {
            var x = p.GetValue(v);
            if (x != null) fields[Snake(p.Name)] = Normal(x);
        }
        return fields;
    }

    // Canon is JSON text with every object's fields sorted, for comparing.
    static string Canon(object v)
    {
        if (v is IDictionary<string, object> o)
            return "{" + string.Join(",", o.OrderBy(kv => kv.Key, StringComparer.Ordinal).Select(kv => Json.Serialize(kv.Key) + ":" + Canon(kv.Value))) + "}";
        if (v is IList list && !(v is string)) return "[" + string.Join(",", list.Cast<object>().Select(Canon)) + "]";
        return Json.Serialize(v);
    }

    static async Task Subscores()
    {
        var board = await NewBoard(new BoardSpec { Order = "asc", Subscore = "asc", Mode = "best", Windows = new[] { "all", "day" } });
        Assert.Equal("asc", (await client.GetBoardAsync(board)).Subscore);
        var conflict = await Assert.Throws(() => client.PutBoardAsync(board, new BoardSpec { Subscore = "desc" }));
        Assert.Equal("conflict subscore", conflict.Code + " " + conflict.Field);
        var ada = await client.SubmitBoardEventsAsync(board, new Event { Member = "ada", Value = 61000, Subscore = 2 });
        Assert.Equal("1 61000 2", ada[0].Entries["all"].Rank + " " + ada[0].Entries["all"].Score + " " + ada[0].Entries["all"].Subscore);
        await client.SubmitBoardEventsAsync(board, new[] { new Event { Member = "bob", Value = 61000, Subscore = 1 }, new Event { Member = "cy", Value = 62000 } });
        var page = await client.GetEntriesAsync(board);
        Assert.Equal("bob 61000/1, ada 61000/2, cy 62000/0", string.Join(", ", page.Entries.Select(e => e.Member + " " + e.Score + "/" + e.Subscore)));
        Assert.Equal(2L, (await client.GetMemberEntryAsync(board, "ada")).Entry.Subscore);
        Assert.Equal(2, (await client.GetRankAsync(board, 61000, subscore: 1)).Rank, "after bob's same pair, before ada's");
        Assert.Equal(1, (await client.GetRankAsync(board, 61000)).Rank, "subscore 0 by default");
        var better = await client.SubmitBoardEventsAsync(board, new Event { Member = "ada", Value = 61000, Subscore = 0 });
        var all = better[0].Entries["all"];
        Assert.Equal("1 0, before 2 2", all.Rank + " " + all.Subscore + ", before " + all.Previous.Rank + " " + all.Previous.Subscore);
        Assert.Equal("0 2", string.Join(" ", (await client.MemberHistoryAsync(board, "ada", window: "all")).Select(p => p.Subscore)));

        var plain = await NewBoard();
        Assert.True((await client.GetBoardAsync(plain)).Subscore == null, "a board without a subscore");
        var refused = await Assert.Throws(() => client.SubmitBoardEventsAsync(plain, new[] { new Event { Member = "ada", Value = 1, Subscore = 0 } }));
        Assert.Equal("invalid_argument events[0].subscore", refused.Code + " " + refused.Field);
        var none = await client.SubmitBoardEventsAsync(plain, new Event { Member = "ada", Value = 1, Tag = "kart-1" });
        Assert.Equal("kart-1", (await client.GetMemberEntryAsync(plain, "ada")).Entry.Tag, "the tag of an event the client gave an id");
        Assert.True(none[0].Entries["all"].Subscore == null && (await client.GetEntriesAsync(plain)).Entries[0].Subscore == null, "no subscore on a board without");
    }

    static async Task BoardLife()
    {
        var board = await NewBoard();
        var info = await client.GetBoardAsync(board);
        Assert.Equal("all day last7d", string.Join(" ", info.Windows));
        Assert.Equal(0, info.Current["day"].Total);
        Assert.True((await client.ListBoardsAsync()).Any(b => b.Id == board), "listed");

        var results = await client.SubmitBoardEventsAsync(board, new[]
        {
            new Event { Member = "alice", Value = 5, Id = "a1", Name = "Alice", Tag = "kart-3" },
            new Event { Member = "bob", Value = 3 },
            new Event { Member = "carol", Value = 4 },
        });
        Assert.Equal(3, results.Count);
        Assert.Equal("applied", results[0].Status);
        Assert.Equal("1 5", results[0].Entries["all"].Rank + " " + results[0].Entries["all"].Score);
        Assert.True(results[0].Entries["all"].Previous == null, "no standing before a first score");
        Assert.True(Guid.TryParse(results[1].Id, out _), "the client gives an event without an id a UUID: " + results[1].Id);

        var page = await client.GetEntriesAsync(board, window: "day", limit: 2);
        Assert.Equal(3, page.Total);
        Assert.Equal("1 alice 5, 2 carol 4", string.Join(", ", page.Entries.Select(e => e.Rank + " " + e.Member + " " + e.Score)));
        Assert.Equal("Alice", page.Entries[0].Name);
        Assert.Equal("kart-3 none", page.Entries[0].Tag + " " + (page.Entries[1].Tag ?? "none"));
        Assert.True(DateTimeOffset.UtcNow - page.Entries[0].ReachedAt < TimeSpan.FromMinutes(1), "reached_at is now: " + page.Entries[0].ReachedAt);
        Assert.Equal("carol", (await client.GetEntriesAsync(board, minScore: 4, maxScore: 4)).Entries[0].Member);
        Assert.Equal(3, (await client.GetMemberEntryAsync(board, "bob")).Entry.Rank);
        Assert.Equal("alice carol bob", string.Join(" ", (await client.GetAroundAsync(board, "carol", radius: 1)).Entries.Select(e => e.Member)));
        Assert.Equal("1 3", string.Join(" ", (await client.LookupAsync(board, new[] { "bob", "alice", "nobody" })).Entries.Select(e => e.Rank)));
        var rank = await client.GetRankAsync(board, 4);
        Assert.Equal("3 of 3", rank.Rank + " of " + rank.Total);
        // The end of a run: rank, the share beaten, the neighbours, and where the scores lie.
        var me = await client.GetMemberEntryAsync(board, "carol");
        Assert.Equal("2 of 3, 50%", me.Entry.Rank + " of " + me.Total + ", " + me.Entry.Percentile + "%");
        Assert.Equal("100 50 0", string.Join(" ", (await client.GetAroundAsync(board, "carol", radius: 1)).Entries.Select(e => e.Percentile)));
        Assert.Equal("0", string.Join(" ", (await client.LookupAsync(board, new[] { "bob" })).Entries.Select(e => e.Percentile)));
        Assert.True((await client.GetEntriesAsync(board)).Entries[0].Percentile == null, "a page of the top has no percentiles");
        var dist = await client.GetDistributionAsync(board, buckets: 3);
        Assert.Equal("3 [3, 3] 1, [4, 4] 1, [5, 5] 1", dist.Total + " " + string.Join(", ", dist.Buckets.Select(b => "[" + b.Min + ", " + b.Max + "] " + b.Count)));
        Assert.Equal("1 2", string.Join(" ", (await client.GetDistributionAsync(board, edges: new long[] { 0, 4, 10 }, window: "day")).Buckets.Select(b => b.Count)));
        var bad = await Assert.Throws(() => client.GetDistributionAsync(board, edges: new long[] { 4, 0 }));
        Assert.Equal("invalid_argument edges", bad.Code + " " + bad.Field);
        var periods = await client.ListPeriodsAsync(board, "day");
        Assert.Equal(false, periods[0].Closed);
        Assert.Equal(3, (await client.GetEntriesAsync(board, at: DateTimeOffset.UtcNow)).Total);
        Assert.Equal(3, (await client.GetEntriesAsync(board, period: periods[0].Id, window: "day")).Total);
        var points = await client.MemberHistoryAsync(board, "alice", window: "all");
        Assert.Equal("1 5 kart-3", string.Join(", ", points.Select(p => p.Rank + " " + p.Score + " " + p.Tag)));

        Assert.Equal("SE", (await client.PutProfileAsync("alice", new ProfileSpec { Metadata = new Dictionary<string, object> { ["country"] = "SE" } })).Metadata["country"]);
        Assert.Equal("Alice", (await client.GetProfileAsync("alice")).Name);
        Assert.Equal("SE", (await client.GetEntriesAsync(board, metadata: true)).Entries[0].Metadata["country"]);
        Assert.Equal(true, (await client.HideMemberAsync("carol")).Hidden);
        Assert.Equal(2, (await client.GetEntriesAsync(board)).Total);
        Assert.Equal(false, (await client.UnhideMemberAsync("carol")).Hidden);
        Assert.Equal("retracted", (await client.RetractEventAsync(board, "a1")).Status);
        Assert.Equal("carol", (await client.GetEntriesAsync(board)).Entries[0].Member);
        Assert.Equal(2, (await client.GetEntriesAsync(board)).Total, "alice's only event was retracted");
        await client.DeleteMemberAsync("bob");
        Assert.Equal("carol", string.Join(" ", (await client.GetEntriesAsync(board)).Entries.Select(e => e.Member)));

        var across = await client.SubmitEventsAsync(new[] { new Event { Board = board, Member = "dan", Value = 9 } }, ranks: false);
        Assert.True(across[0].Entries == null, "ranks: false leaves the ranks out");
        Assert.Equal("dan", (await client.GetEntriesAsync(board)).Entries[0].Member);

        await client.DeleteBoardAsync(board);
        var e404 = await Assert.Throws(() => client.GetBoardAsync(board));
        Assert.Equal("404 not_found", e404.Status + " " + e404.Code);
    }

    static async Task RewardsAndHooks()
    {
        var rewards = new[] { new RewardRule { Window = "day", Ranks = new[] { 1, 1 }, Reward = new Dictionary<string, object> { ["chest"] = "gold" } } };
        var board = await NewBoard(new BoardSpec { Windows = new[] { "day" }, Rewards = rewards });
        Assert.Equal(Canon(Normal(rewards)), Canon(Normal((await client.GetBoardAsync(board)).Rewards)));
        await client.SubmitBoardEventsAsync(board, new Event { Member = "ann", Value = 3 });
        var today = (await client.ListPeriodsAsync(board, "day"))[0].Id;
        var open = await Assert.Throws(() => client.GetResultsAsync(board, today));
        Assert.Equal("409 conflict period", open.Status + " " + open.Code + " " + open.Field);

        var hook = "cs-" + Process.GetCurrentProcess().Id;
        var made = await client.PutHookAsync(hook, new HookSpec { Url = "http://127.0.0.1:9/results", Secret = "a-secret-of-16-bytes", Boards = new[] { board } });
        Assert.Equal(hook + " http://127.0.0.1:9/results " + board, made.Id + " " + made.Url + " " + string.Join(",", made.Boards));
        Assert.True((await client.ListHooksAsync()).Any(h => h.Id == hook), "listed");
        Assert.Equal(0, (await client.ListDeliveriesAsync(hook, state: "pending")).Count);
        var none = await Assert.Throws(() => client.GetDeliveryAsync(hook, hook + ":" + board + ":day:" + today + ":1"));
        Assert.Equal("404 not_found", none.Status + " " + none.Code);
        var bad = await Assert.Throws(() => client.PutHookAsync("cs-bad", new HookSpec { Url = "ftp://x" }));
        Assert.Equal("400 invalid_argument url", bad.Status + " " + bad.Code + " " + bad.Field);
        await client.DeleteHookAsync(hook);
        Assert.Equal(404, (await Assert.Throws(() => client.GetHookAsync(hook))).Status);
    }

    static async Task FlagsReview()
    {
        var board = await NewBoard(new BoardSpec { Order = "asc", Mode = "best", Windows = new[] { "all" },
            Guard = new GuardSpec { Jump = new GuardRule { Window = "all", Percent = 10, Action = "hold" } } });
        // Hiding is on every board: a member of this test's own.
        var racer = "cs-racer-" + Process.GetCurrentProcess().Id;
        await client.SubmitBoardEventsAsync(board, new[] { new Event { Member = racer, Value = 60000, Id = "lap-1" }, new Event { Member = "steady", Value = 61000 } });
        var held = (await client.SubmitBoardEventsAsync(board, new Event { Member = racer, Value = 45000, Id = "lap-2" }))[0];
        Assert.Equal("applied", held.Status, "a held event is stored");
        Assert.True(held.Flag != null, "a 45 s lap after a 60 s one names its flag");
        Assert.Equal("steady", string.Join(",", (await client.GetEntriesAsync(board)).Entries.Select(e => e.Member)), "the held member is hidden");
        var open = (await client.ListFlagsAsync(state: "open", board: board)).Single();
        Assert.Equal(held.Flag + " " + racer + " jump open lap-2", open.Id + " " + open.Member + " " + open.Rule + " " + open.State + " " + string.Join(",", open.Events.Select(e => e.Id)));
        var confirmed = await client.ResolveFlagAsync(held.Flag, new FlagResolution { Action = "confirm" });
        Assert.Equal("confirmed", confirmed.State);
        Assert.Equal("confirmed", (await client.GetFlagAsync(held.Flag)).State);
        Assert.Equal(0, (await client.ListFlagsAsync(state: "open", board: board)).Count, "nothing left to review");
        // Shown again, the member's best is the lap before: the confirmed lap is retracted.
        await client.UnhideMemberAsync(racer);
        var page = await client.GetEntriesAsync(board);
        Assert.Equal(racer + ":60000 steady:61000", string.Join(" ", page.Entries.Select(e => e.Member + ":" + e.Score)));
        var again = await Assert.Throws(() => client.ResolveFlagAsync(held.Flag, new FlagResolution { Action = "clear" }));
        Assert.Equal("409 conflict", again.Status + " " + again.Code);
    }

    static async Task Errors()
    {
        var board = await NewBoard();
        var bad = await Assert.Throws(() => client.SubmitBoardEventsAsync(board, new[] { new Event { Member = "a", Value = 1 }, new Event { Member = "", Value = 1 } }));
        Assert.Equal("400 invalid_argument events[1].member", bad.Status + " " + bad.Code + " " + bad.Field);
        Assert.True(bad.Message.StartsWith("events[1].member"), "the message names the field: " + bad.Message);
        Assert.Equal(0, (await client.GetEntriesAsync(board)).Total, "a batch with a bad event stores none");
        var window = await Assert.Throws(() => client.GetEntriesAsync(board, window: "fortnight"));
        Assert.Equal("invalid_argument window", window.Code + " " + window.Field);
        await client.SubmitBoardEventsAsync(board, new Event { Member = "a", Value = 2, Id = "a1" });
        var conflict = await Assert.Throws(() => client.SubmitBoardEventsAsync(board, new Event { Member = "a", Value = 3, Id = "a1" }));
        Assert.Equal("409 conflict", conflict.Status + " " + conflict.Code);
        var late = await Assert.Throws(() => client.SubmitBoardEventsAsync(board, new Event { Member = "a", Value = 3, Ts = DateTimeOffset.UtcNow.AddDays(-30) }));
        Assert.Equal("400 too_late", late.Status + " " + late.Code);
        var wrong = await Assert.Throws(() => new LaurelClient(url, "wrong").ListBoardsAsync());
        Assert.Equal("401 unauthenticated", wrong.Status + " " + wrong.Code);
        var down = await Assert.Throws(() => new LaurelClient("http://127.0.0.1:1") { Retries = 0 }.HealthzAsync());
        Assert.Equal("0 unavailable", down.Status + " " + down.Code);
        Assert.True(down.Retryable, "unreachable is worth trying again");
        Assert.Equal("ok", (await client.HealthzAsync()).Status);
        Assert.Equal("ready", (await client.ReadyzAsync()).Status);
    }

    static async Task LostAnswer()
    {
        var board = await NewBoard();
        // The first answer is lost on its way back, after laurel stored the write: a 503 from
        // a proxy, or a connection that breaks.
        foreach (var lose in new Func<Task<HttpResponseMessage>>[]
        {
            () => Task.FromResult(Answer(503, "{\"error\":{\"code\":\"unavailable\",\"message\":\"lost\"}}", "0")),
            () => { throw new HttpRequestException("the connection was reset"); },
        })
        {
            var member = "dana-" + Guid.NewGuid().ToString("N").Substring(0, 6);
            var lossy = new Via(async (n, request, send) =>
            {
                var res = await send();
                return n == 1 ? await lose() : res;
            });
            var results = await Through(lossy).SubmitBoardEventsAsync(board, new Event { Member = member, Value = 7 });
            Assert.Equal(2, lossy.Calls);
            Assert.Equal("duplicate", results[0].Status, "the retry found the write already stored");
            Assert.Equal(7L, (await client.GetMemberEntryAsync(board, member)).Entry.Score, "counted once");
        }
    }

    static async Task RetriesGiveUp()
    {
        var down = new Via((n, request, send) => Task.FromResult(Answer(503, "{\"error\":{\"code\":\"unavailable\",\"message\":\"recovering\"}}", "0")));
        var e = await Assert.Throws(() => Through(down, 2).ListBoardsAsync());
        Assert.Equal("503 unavailable recovering", e.Status + " " + e.Code + " " + e.Message);
        Assert.Equal(TimeSpan.Zero, e.RetryAfter);
        Assert.Equal(3, down.Calls);
        var limited = new Via((n, request, send) => Task.FromResult(Answer(429, "{\"error\":{\"code\":\"rate_limited\",\"message\":\"slow down\"}}", "0")));
        Assert.Equal("rate_limited", (await Assert.Throws(() => Through(limited, 1).ListBoardsAsync())).Code);
        Assert.Equal(2, limited.Calls);
        var missing = new Via((n, request, send) => Task.FromResult(Answer(404, "{\"error\":{\"code\":\"not_found\",\"message\":\"x\"}}")));
        Assert.Equal("not_found", (await Assert.Throws(() => Through(missing).GetBoardAsync("x"))).Code);
        Assert.Equal(1, missing.Calls, "a 404 is not retried");
        var once = new Via((n, request, send) => Task.FromResult(Answer(503, "{\"error\":{\"code\":\"unavailable\",\"message\":\"x\"}}", "0")));
        Assert.Equal("unavailable", (await Assert.Throws(() => Through(once, 0).SubmitBoardEventsAsync("b", new Event { Member = "m", Value = 1 }))).Code);
        Assert.Equal(1, once.Calls, "Retries = 0: one attempt");
    }

    static async Task TimeoutAndCancel()
    {
        // A server that takes connections and never answers.
        var silent = new TcpListener(IPAddress.Loopback, 0);
        silent.Start();
        var held = new List<TcpClient>();
        var accepting = Task.Run(async () =>
        {
            try
            {
                for (;;) held.Add(await silent.AcceptTcpClientAsync());
            }
            catch (Exception)
            {
                // stopped
            }
        });
        try
        {
            var port = ((IPEndPoint)silent.LocalEndpoint).Port;
            var counted = new Via((n, request, send) => send());
            var quiet = new LaurelClient("http://127.0.0.1:" + port, null, new HttpClient(counted) { Timeout = System.Threading.Timeout.InfiniteTimeSpan })
            {
                Timeout = TimeSpan.FromMilliseconds(300),
                Retries = 1,
                MaxDelay = TimeSpan.FromMilliseconds(50),
            };
            var clock = Stopwatch.StartNew();
            var e = await Assert.Throws(() => quiet.HealthzAsync());
            Assert.Equal("0 unavailable", e.Status + " " + e.Code);
            Assert.True(e.Message.Contains("no answer"), e.Message);
            Assert.Equal(2, counted.Calls);
            Assert.True(clock.Elapsed < TimeSpan.FromSeconds(5), "timed out twice in " + clock.Elapsed);

            quiet.Timeout = TimeSpan.FromSeconds(30);
            clock.Restart();
            using (var cancel = new CancellationTokenSource(TimeSpan.FromMilliseconds(200)))
            {
                try
                {
                    await quiet.HealthzAsync(cancel.Token);
                    throw new Exception("a cancelled call returned");
                }
                catch (OperationCanceledException)
                {
                }
            }
            Assert.True(clock.Elapsed < TimeSpan.FromSeconds(3), "cancelled in " + clock.Elapsed);
            Assert.Equal(3, counted.Calls, "a cancelled call is not retried");
        }
        finally
        {
            silent.Stop();
            await accepting;
            foreach (var c in held) c.Close();
        }
    }

    static async Task FreeFormJson()
    {
        var metadata = new Dictionary<string, object>
        {
            ["big"] = 9007199254740993L, // 2^53 + 1: a double would make it 2^53
            ["min"] = long.MinValue,
            ["half"] = 2.5,
            ["text"] = "Zoë \u2028 \ud83d\ude00 \"quoted\" \\ \t\u0001",
            ["nested"] = new Dictionary<string, object> { ["list"] = new List<object> { 1L, "two", null, true, new List<object>() } },
        };
        var member = "zoë-" + Guid.NewGuid().ToString("N").Substring(0, 6);
        await client.PutProfileAsync(member, new ProfileSpec { Name = "Zoë 😀", Metadata = metadata });
        var profile = await client.GetProfileAsync(member);
        Assert.Equal(Canon(metadata), Canon(profile.Metadata));
        Assert.Equal("Zoë 😀", profile.Name);
        Assert.Equal("😀 \"\\", (string)Json.Parse("\"\\ud83d\\ude00 \\\"\\\\\""));
        Assert.Equal("{\"f\":0.1,\"d\":1E+300,\"m\":{\"1\":2}}", Json.Serialize(new Dictionary<string, object> { ["f"] = 0.1f, ["d"] = 1e300, ["m"] = new Dictionary<string, int> { ["1"] = 2 } }));
        foreach (var unwritable in new object[] { double.NaN, float.PositiveInfinity, new object(), new Dictionary<int, string> { [1] = "x" } })
        {
            try
            {
                Json.Serialize(new List<object> { unwritable });
                throw new Exception("wrote " + unwritable);
            }
            catch (ArgumentException)
            {
            }
        }
        foreach (var malformed in new[] { "{", "[1,]", "{\"a\" 1}", "\"\\x\"", "tru", "1 2", "-", "1.", "\"\u0001\"" })
        {
            try
            {
                Json.Parse(malformed);
                throw new Exception("parsed " + malformed);
            }
            catch (FormatException)
            {
            }
        }
        var deep = new StringBuilder();
        for (var i = 0; i < 100; i++) deep.Append('[');
        try
        {
            Json.Parse(deep.ToString());
            throw new Exception("parsed 100 nested arrays");
        }
        catch (FormatException)
        {
        }
        await client.DeleteMemberAsync(member);
    }

    static async Task LivePage()
    {
        var board = await NewBoard();
        await client.SubmitBoardEventsAsync(board, new Event { Member = "erin", Value = 1 });
        var seen = new List<string>();
        var threads = new HashSet<int>();
        var main = 0;
        Task submitted = null;
        using (var stop = new CancellationTokenSource(TimeSpan.FromSeconds(10)))
        {
            // As in Unity: started from a thread with a SynchronizationContext of its own.
            await MainThread.Run(async () =>
            {
                main = Thread.CurrentThread.ManagedThreadId;
                await client.StreamPageAsync(board, page =>
                {
                    threads.Add(Thread.CurrentThread.ManagedThreadId);
                    seen.Add(string.Join(",", page.Entries.Select(e => e.Member + ":" + e.Score)));
                    if (seen.Count == 1) submitted = client.SubmitBoardEventsAsync(board, new Event { Member = "finn", Value = 2 });
                    if (seen.Count == 2) stop.Cancel();
                }, window: "all", limit: 5, cancellationToken: stop.Token);
            });
        }
        await submitted;
        Assert.Equal("erin:1 | finn:2,erin:1", string.Join(" | ", seen));
        Assert.Equal(main.ToString(), string.Join(",", threads), "onPage ran on the thread that started the stream");
    }

    static async Task LiveMemberStanding()
    {
        var board = await NewBoard();
        await client.SubmitBoardEventsAsync(board, new[] { new Event { Member = "cs-rival", Value = 1, Name = "Rival" }, new Event { Member = "me", Value = 3 } });
        var seen = new List<string>();
        Task submitted = null;
        using (var stop = new CancellationTokenSource(TimeSpan.FromSeconds(10)))
        {
            await client.StreamMemberAsync(board, "me", s =>
            {
                var from = s.Previous == null ? "" : "#" + s.Previous.Rank + " → ";
                seen.Add(s.Window + " " + from + "#" + s.Rank + (s.PassedBy == null ? "" : " passed by " + s.PassedBy.Name));
                if (seen.Count == 1) submitted = client.SubmitBoardEventsAsync(board, new Event { Member = "cs-rival", Value = 4 });
                if (seen.Count == 2) stop.Cancel();
            }, window: "all", cancellationToken: stop.Token);
        }
        await submitted;
        Assert.Equal("all #1 | all #1 → #2 passed by Rival", string.Join(" | ", seen));
    }

    static async Task LivePageEnds()
    {
        var board = await NewBoard();
        await client.SubmitBoardEventsAsync(board, new Event { Member = "gus", Value = 1 });
        var pages = 0;
        using (var stop = new CancellationTokenSource(TimeSpan.FromSeconds(10)))
        {
            var e = await Assert.Throws(() => client.StreamPageAsync(board, page =>
            {
                if (++pages == 1) client.DeleteBoardAsync(board);
            }, cancellationToken: stop.Token));
            Assert.Equal("404 not_found", e.Status + " " + e.Code);
            Assert.True(!stop.IsCancellationRequested, "ended by the server, not by the test's timeout");
        }
        var missing = await Assert.Throws(() => client.StreamPageAsync("cs-no-such-board", page => { }));
        Assert.Equal("404 not_found", missing.Status + " " + missing.Code);
    }

    static string PageEvent(int total) => "event: page\ndata: {\"board\":\"b\",\"window\":\"all\",\"period\":{\"id\":\"all\"},\"total\":" + total + ",\"entries\":[]}\n\n";

    static async Task LivePageQuiet()
    {
        var urls = new List<Uri>();
        // One page, then silence: the connection never closes.
        var fake = new Via((n, request, send) =>
        {
            urls.Add(request.RequestUri);
            return Task.FromResult(Streaming(false, ": ping\n\n", PageEvent(n)));
        });
        var seen = new List<int>();
        using (var stop = new CancellationTokenSource(TimeSpan.FromSeconds(5)))
        {
            await Through(fake).StreamPageAsync("b", page =>
            {
                seen.Add(page.Total);
                if (seen.Count == 2) stop.Cancel();
            }, window: "week", cohort: "ann", limit: 3, metadata: true, idleTimeout: TimeSpan.FromMilliseconds(200), cancellationToken: stop.Token);
        }
        Assert.Equal("1 2", string.Join(" ", seen), "a second connection after the first went quiet");
        Assert.Equal("/v1/boards/b/stream?window=week&cohort=ann&limit=3&metadata=true", urls[0].PathAndQuery);
    }

    static async Task LivePageBacksOff()
    {
        var fake = new Via((n, request, send) => Task.FromResult(Streaming(true)));
        using (var stop = new CancellationTokenSource(TimeSpan.FromSeconds(1)))
        {
            await Through(fake).StreamPageAsync("b", page => throw new Exception("no page was sent"), cancellationToken: stop.Token);
        }
        // 50–150 ms, then doubling: about five connections in a second, not hundreds.
        Assert.True(fake.Calls >= 2 && fake.Calls <= 8, fake.Calls + " connections in a second");
    }

    static async Task LivePageRetryAfter()
    {
        var stop = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        var busy = new Via((n, request, send) =>
        {
            if (n == 2) stop.Cancel();
            return Task.FromResult(Answer(503, "{\"error\":{\"code\":\"unavailable\",\"message\":\"busy\"}}", "30"));
        });
        var clock = Stopwatch.StartNew();
        var capped = Through(busy);
        capped.MaxDelay = TimeSpan.FromMilliseconds(100);
        await capped.StreamPageAsync("b", page => throw new Exception("no page"), cancellationToken: stop.Token);
        Assert.Equal(2, busy.Calls);
        Assert.True(clock.Elapsed < TimeSpan.FromSeconds(2), "waited " + clock.Elapsed + " for a Retry-After of 30 s capped at 100 ms");
    }

    static async Task MemberTokens()
    {
        var board = await NewBoard();
        var token = MemberToken.Mint(tokenSecret, "ada", new[] { board }, kid: tokenKid, ttl: TimeSpan.FromMinutes(10));
        var game = new LaurelClient(url, token);
        var me = await game.WhoamiAsync();
        Assert.Equal("write ada " + board, me.Scope + " " + me.Member + " " + string.Join(",", me.Boards));
        Assert.True(me.ExpiresAt > DateTimeOffset.UtcNow.AddMinutes(9) && me.ExpiresAt <= DateTimeOffset.UtcNow.AddMinutes(10).AddSeconds(1), "expires in 10 minutes: " + me.ExpiresAt);
        Assert.Equal("applied", (await game.SubmitBoardEventsAsync(board, new Event { Member = "ada", Value = 5 }))[0].Status);
        Assert.Equal("ada", (await game.GetEntriesAsync(board)).Entries[0].Member);
        var other = await Assert.Throws(() => game.SubmitBoardEventsAsync(board, new Event { Member = "bob", Value = 500 }));
        Assert.Equal("403 permission_denied events[0].member", other.Status + " " + other.Code + " " + other.Field);
        var forged = MemberToken.Mint("another-secret-of-at-least-32-bytes", "ada", new[] { board }, kid: tokenKid);
        var refused = await Assert.Throws(() => new LaurelClient(url, forged) { Retries = 0 }.GetEntriesAsync(board));
        Assert.Equal("401 unauthenticated", refused.Status + " " + refused.Code);
        var reader = new LaurelClient(url, MemberToken.Mint(tokenSecret, "ada", new[] { board }, kid: tokenKid, scope: "read"));
        Assert.Equal("read", (await reader.WhoamiAsync()).Scope);
        var readOnly = await Assert.Throws(() => reader.SubmitBoardEventsAsync(board, new Event { Member = "ada", Value = 1 }));
        Assert.Equal("403 permission_denied", readOnly.Status + " " + readOnly.Code);
    }

    static async Task PathIds()
    {
        var board = await NewBoard();
        var counting = new Via((n, request, send) => send());
        var c = Through(counting);
        foreach (var call in new Func<Task>[] { () => c.GetMemberEntryAsync(board, "."), () => c.GetAroundAsync(board, ".."), () => c.RetractEventAsync(board, ".."), () => c.GetBoardAsync(""), () => c.GetProfileAsync(null) })
        {
            var e = await Assert.Throws(call);
            Assert.Equal("400 invalid_argument", e.Status + " " + e.Code);
            Assert.True(e.Message.Contains("cannot stand in a URL's path"), e.Message);
        }
        Assert.Equal(0, counting.Calls, "nothing was sent");
        // Dots within an id, and characters a path or query would read, are ids like any other.
        foreach (var member in new[] { "...", "a?b&c=d#e %2E", "ünï cödé" })
        {
            await client.SubmitBoardEventsAsync(board, new Event { Member = member, Value = 2, Id = "../" + member });
            Assert.Equal(2L, (await client.GetMemberEntryAsync(board, member)).Entry.Score, member);
            Assert.Equal("retracted", (await client.RetractEventAsync(board, "../" + member)).Status, member);
            Assert.Equal("not_found", (await Assert.Throws(() => client.GetMemberEntryAsync(board, member))).Code, member);
        }
    }

    static async Task NotLaurels()
    {
        Func<int, Via> page = status => new Via((n, request, send) => Task.FromResult(Answer(status, "<html>proxy</html>")));
        var e404 = await Assert.Throws(() => Through(page(404)).GetBoardAsync("x"));
        Assert.Equal("404 not_found", e404.Status + " " + e404.Code);
        var e403 = await Assert.Throws(() => Through(page(403)).GetBoardAsync("x"));
        Assert.Equal("403 permission_denied", e403.Status + " " + e403.Code);
        var gateway = new Via((n, request, send) => Task.FromResult(Answer(502, "bad gateway", "0")));
        var e502 = await Assert.Throws(() => Through(gateway, 1).GetBoardAsync("x"));
        Assert.Equal("502 unavailable", e502.Status + " " + e502.Code);
        Assert.Equal(2, gateway.Calls, "a gateway's 502 is tried again");
        var garbled = await Assert.Throws(() => Through(page(200)).GetBoardAsync("x"));
        Assert.Equal("200 internal", garbled.Status + " " + garbled.Code);
        var down = await Assert.Throws(() => new LaurelClient("http://127.0.0.1:1") { Retries = 0 }.MetricsAsync());
        Assert.Equal("0 unavailable", down.Status + " " + down.Code);
        Assert.True((await client.MetricsAsync()).Contains("# HELP "), "Prometheus's text");
    }

    static async Task UnityExample()
    {
        var board = await NewBoard(new BoardSpec { Windows = new[] { "week", "all" } });
        await client.SubmitBoardEventsAsync(board, new[]
        {
            new Event { Member = "ann", Value = 50, Name = "Ann" },
            new Event { Member = "bob", Value = 30, Name = "Bob" },
            new Event { Member = "cy", Value = 10 },
        });
        // What Unity does: make the component, fill its serialized fields, call it.
        var screen = new RunEndScreen();
        var rank = new Text();
        var neighbours = new Text();
        Set(screen, "laurelUrl", url);
        Set(screen, "board", board);
        Set(screen, "rankText", rank);
        Set(screen, "neighboursText", neighbours);
        screen.SignedIn("ada", MemberToken.Mint(tokenSecret, "ada", new[] { board }, kid: tokenKid));
        var run = Guid.NewGuid().ToString();
        await screen.ShowRun(run, 40);
        Assert.Equal("#2 of 4 this week · better than 66.66% of players", rank.text);
        Assert.Equal("  #1 Ann 50\n▶ #2 ada 40\n  #3 Bob 30\n  #4 cy 10", neighbours.text.TrimEnd().Replace("\r\n", "\n"));
        // The same run sent again (the game restarted before the answer came): counted once.
        await screen.ShowRun(run, 40);
        Assert.Equal("#2 of 4 this week · better than 66.66% of players", rank.text);
        Assert.Equal(40L, (await client.GetMemberEntryAsync(board, "ada")).Entry.Score);
        // laurel out of reach: the screen says so, and keeps the run for later.
        Set(screen, "laurel", new LaurelClient("http://127.0.0.1:1") { Retries = 0 });
        await screen.ShowRun(Guid.NewGuid().ToString(), 41);
        Assert.True(rank.text.Contains("later"), rank.text);
    }

    static void Set(object target, string field, object value)
    {
        var f = target.GetType().GetField(field, BindingFlags.NonPublic | BindingFlags.Public | BindingFlags.Instance);
        Assert.True(f != null, target.GetType().Name + " has no field " + field);
        f.SetValue(target, value);
    }

    // Through is a client whose requests go through handler.
    static LaurelClient Through(Via handler, int retries = 3) =>
        new LaurelClient(url, key, new HttpClient(handler) { Timeout = System.Threading.Timeout.InfiniteTimeSpan }) { Retries = retries };

    static HttpResponseMessage Answer(int status, string body, string retryAfter = null)
    {
        var res = new HttpResponseMessage((HttpStatusCode)status) { Content = new StringContent(body, Encoding.UTF8, "application/json") };
        if (retryAfter != null) res.Headers.TryAddWithoutValidation("Retry-After", retryAfter);
        return res;
    }

    // Streaming answers 200 with the chunks as a text/event-stream, then ends it or, unless
    // ends, holds it open until the client closes it.
    static HttpResponseMessage Streaming(bool ends, params string[] chunks)
    {
        var content = new StreamContent(new Feed(chunks.Select(Encoding.UTF8.GetBytes), ends));
        content.Headers.TryAddWithoutValidation("Content-Type", "text/event-stream");
        return new HttpResponseMessage(HttpStatusCode.OK) { Content = content };
    }
}

/// <summary>
/// An HttpMessageHandler that counts the requests and answers each with answer(n, request,
/// send): send passes it on to laurel.
/// </summary>
sealed class Via : DelegatingHandler
{
    readonly Func<int, HttpRequestMessage, Func<Task<HttpResponseMessage>>, Task<HttpResponseMessage>> answer;
    int calls;

    public Via(Func<int, HttpRequestMessage, Func<Task<HttpResponseMessage>>, Task<HttpResponseMessage>> answer) : base(new HttpClientHandler())
    {
        this.answer = answer;
    }

    public int Calls => Volatile.Read(ref calls);

    protected override Task<HttpResponseMessage> SendAsync(HttpRequestMessage request, CancellationToken cancellationToken)
    {
        var n = Interlocked.Increment(ref calls);
        return answer(n, request, () => base.SendAsync(request, cancellationToken));
    }
}

/// <summary>A body of chunks that ends after them or, unless ends, is held open until closed.</summary>
sealed class Feed : Stream
{
    readonly Queue<byte[]> chunks;
    readonly bool ends;
    readonly TaskCompletionSource<bool> closed = new TaskCompletionSource<bool>();

    public Feed(IEnumerable<byte[]> chunks, bool ends)
    {
        this.chunks = new Queue<byte[]>(chunks);
        this.ends = ends;
    }

    public override async Task<int> ReadAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken)
    {
        lock (chunks)
        {
            if (chunks.Count > 0)
            {
                var chunk = chunks.Dequeue();
                var n = Math.Min(count, chunk.Length);
                Array.Copy(chunk, 0, buffer, offset, n);
                if (n < chunk.Length)
                {
                    var rest = new Queue<byte[]>(new[] { chunk.Skip(n).ToArray() }.Concat(chunks));
                    chunks.Clear();
                    foreach (var c in rest) chunks.Enqueue(c);
                }
                return n;
            }
        }
        if (ends) return 0;
        await closed.Task;
        throw new ObjectDisposedException("the body was closed");
    }

    public override int Read(byte[] buffer, int offset, int count) => ReadAsync(buffer, offset, count, CancellationToken.None).GetAwaiter().GetResult();

    protected override void Dispose(bool disposing)
    {
        closed.TrySetResult(true);
        base.Dispose(disposing);
    }

    public override bool CanRead => true;
    public override bool CanSeek => false;
    public override bool CanWrite => false;
    public override long Length => throw new NotSupportedException();
    public override long Position { get => throw new NotSupportedException(); set => throw new NotSupportedException(); }
    public override void Flush() { }
    public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();
    public override void SetLength(long value) => throw new NotSupportedException();
    public override void Write(byte[] buffer, int offset, int count) => throw new NotSupportedException();
}

/// <summary>
/// A thread with a SynchronizationContext of its own that runs what is posted to it, one at a
/// time, as Unity's main thread does.
/// </summary>
sealed class MainThread : SynchronizationContext
{
    readonly Queue<KeyValuePair<SendOrPostCallback, object>> queue = new Queue<KeyValuePair<SendOrPostCallback, object>>();

    public override void Post(SendOrPostCallback d, object state)
    {
        lock (queue)
        {
            queue.Enqueue(new KeyValuePair<SendOrPostCallback, object>(d, state));
            Monitor.Pulse(queue);
        }
    }

    /// <summary>Runs work on a new such thread until the task it returns is done.</summary>
    public static Task Run(Func<Task> work)
    {
        var done = new TaskCompletionSource<bool>();
        var thread = new Thread(() =>
        {
            var context = new MainThread();
            SetSynchronizationContext(context);
            var task = work();
            task.ContinueWith(_ => context.Post(s => { }, null)); // wakes the loop
            while (!task.IsCompleted)
            {
                KeyValuePair<SendOrPostCallback, object> next;
                lock (context.queue)
                {
                    while (context.queue.Count == 0) Monitor.Wait(context.queue);
                    next = context.queue.Dequeue();
                }
                next.Key(next.Value);
            }
            if (task.IsFaulted) done.SetException(task.Exception.InnerExceptions);
            else if (task.IsCanceled) done.SetCanceled();
            else done.SetResult(true);
        });
        thread.Start();
        return done.Task;
    }
}

static class Assert
{
    public static void True(bool condition, string what)
    {
        if (!condition) throw new Exception("not so: " + what);
    }

    public static void Equal<T>(T expected, T actual, string what = null)
    {
        if (!EqualityComparer<T>.Default.Equals(expected, actual))
            throw new Exception((what == null ? "" : what + ": ") + "expected «" + expected + "», got «" + actual + "»");
    }

    /// <summary>The LaurelException that call throws.</summary>
    public static async Task<LaurelException> Throws(Func<Task> call)
    {
        try
        {
            await call();
        }
        catch (LaurelException e)
        {
            return e;
        }
        throw new Exception("no LaurelException");
    }
}
