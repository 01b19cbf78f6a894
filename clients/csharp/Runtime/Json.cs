// JSON for the API's bodies, with no dependency: a game's Json.NET may be of any version, and
// the models below read and write their fields by name, so that nothing depends on reflection
// (which IL2CPP's code stripping would break).
using System;
using System.Collections;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace Laurel
{
    /// <summary>
    /// Reads and writes JSON as plain .NET values: an object is a
    /// <c>Dictionary&lt;string, object&gt;</c> (its fields in the order read), an array a
    /// <c>List&lt;object&gt;</c>, a number a <c>long</c> when it is an integer in long's range and a
    /// <c>double</c> otherwise, and then <c>string</c>, <c>bool</c> and <c>null</c>. The free-form
    /// fields of the models (metadata, rewards) hold such values.
    /// </summary>
    internal static class Json
    {
        /// <summary>Parses one JSON value; malformed text is a <see cref="FormatException"/>.</summary>
        public static object Parse(string text)
        {
            if (text == null) throw new ArgumentNullException(nameof(text));
            var r = new Reader(text);
            r.Space();
            var value = r.Value(0);
            r.Space();
            if (r.Pos != text.Length) throw r.Error("text after the value");
            return value;
        }

        /// <summary>
        /// Writes a value as JSON: null, strings, booleans, numbers, DateTimeOffset and DateTime
        /// (RFC 3339 in UTC, to the millisecond, as laurel answers), dictionaries with string keys,
        /// and any other enumerable as an array. Anything else is an <see cref="ArgumentException"/>.
        /// </summary>
        public static string Serialize(object value)
        {
            var sb = new StringBuilder();
            Write(sb, value, 0);
            return sb.ToString();
        }

        const int maxDepth = 64;

        static void Write(StringBuilder sb, object value, int depth)
        {
            if (depth > maxDepth) throw new ArgumentException("JSON nested deeper than " + maxDepth);
            if (value == null) sb.Append("null");
            else if (value is string s) Quote(sb, s);
            else if (value is bool b) sb.Append(b ? "true" : "false");
            else if (value is long || value is int || value is short || value is sbyte || value is ulong || value is uint || value is ushort || value is byte)
                sb.Append(Convert.ToString(value, CultureInfo.InvariantCulture));
            else if (value is double d) Number(sb, d, d.ToString("R", CultureInfo.InvariantCulture));
            else if (value is float f) Number(sb, f, f.ToString("R", CultureInfo.InvariantCulture)); // 0.1f is 0.1, not 0.100000001490116
            else if (value is decimal m) sb.Append(m.ToString(CultureInfo.InvariantCulture));
            else if (value is DateTimeOffset t) Quote(sb, Time(t));
            else if (value is DateTime dt) Quote(sb, Time(new DateTimeOffset(dt.Kind == DateTimeKind.Unspecified ? DateTime.SpecifyKind(dt, DateTimeKind.Utc) : dt)));
            else if (value is IDictionary<string, object> o) WriteObject(sb, o, depth);
            else if (value is IDictionary map) WriteObject(sb, Fields(map), depth);
            else if (value is IEnumerable list)
            {
                sb.Append('[');
                var first = true;
                foreach (var item in list)
                {
                    if (!first) sb.Append(',');
                    first = false;
                    Write(sb, item, depth + 1);
                }
                sb.Append(']');
            }
            else throw new ArgumentException("cannot write a " + value.GetType().Name + " as JSON");
        }

        static void WriteObject(StringBuilder sb, IEnumerable<KeyValuePair<string, object>> fields, int depth)
        {
            sb.Append('{');
            var first = true;
            foreach (var kv in fields)
            {
                if (!first) sb.Append(',');
                first = false;
                Quote(sb, kv.Key);
                sb.Append(':');
                Write(sb, kv.Value, depth + 1);
            }
            sb.Append('}');
        }

        // Fields are the entries of a dictionary that is not of string to object (string to
        // int, say), which a JSON object's keys must be.
        static IEnumerable<KeyValuePair<string, object>> Fields(IDictionary map)
        {
            foreach (DictionaryEntry kv in map)
            {
                if (!(kv.Key is string key)) throw new ArgumentException("a JSON object's keys are strings, not " + kv.Key.GetType().Name);
                yield return new KeyValuePair<string, object>(key, kv.Value);
            }
        }

        static void Number(StringBuilder sb, double d, string text)
        {
            if (double.IsNaN(d) || double.IsInfinity(d)) throw new ArgumentException("JSON has no " + text);
            sb.Append(text);
        }

        /// <summary>Puts a field of an object to write when it is set.</summary>
        internal static void Put(Dictionary<string, object> o, string name, object value)
        {
            if (value != null) o[name] = value;
        }

        /// <summary>An instant as laurel writes one: RFC 3339 in UTC, to the millisecond.</summary>
        internal static string Time(DateTimeOffset t) =>
            t.UtcDateTime.ToString("yyyy-MM-dd'T'HH:mm:ss.fff'Z'", CultureInfo.InvariantCulture);

        static void Quote(StringBuilder sb, string s)
        {
            sb.Append('"');
            foreach (var c in s)
            {
                switch (c)
                {
                    case '"': sb.Append("\\\""); break;
                    case '\\': sb.Append("\\\\"); break;
                    case '\n': sb.Append("\\n"); break;
                    case '\r': sb.Append("\\r"); break;
                    case '\t': sb.Append("\\t"); break;
                    default:
                        // Control characters escaped; so are U+2028 and U+2029, which some
                        // JavaScript parsers take for line ends. A lone surrogate is written as
                        // it is: laurel refuses it as invalid UTF-8, saying which field.
                        if (c < ' ' || c == '\u2028' || c == '\u2029') sb.Append("\\u").Append(((int)c).ToString("x4", CultureInfo.InvariantCulture));
                        else sb.Append(c);
                        break;
                }
            }
            sb.Append('"');
        }

        sealed class Reader
        {
            readonly string s;
            public int Pos;

            public Reader(string text) { s = text; }

            public FormatException Error(string what) => new FormatException("JSON: " + what + " at offset " + Pos);

            public void Space()
            {
                while (Pos < s.Length && (s[Pos] == ' ' || s[Pos] == '\t' || s[Pos] == '\n' || s[Pos] == '\r')) Pos++;
            }

            public object Value(int depth)
            {
                if (depth > maxDepth) throw Error("nesting deeper than " + maxDepth);
                if (Pos >= s.Length) throw Error("unexpected end");
                switch (s[Pos])
                {
                    case '{': return Object(depth);
                    case '[': return Array(depth);
                    case '"': return String();
                    case 't': Word("true"); return true;
                    case 'f': Word("false"); return false;
                    case 'n': Word("null"); return null;
                    default: return Number();
                }
            }

            void Word(string w)
            {
                if (string.CompareOrdinal(s, Pos, w, 0, w.Length) != 0) throw Error("unexpected character");
                Pos += w.Length;
            }

            void Expect(char c)
            {
                if (Pos >= s.Length || s[Pos] != c) throw Error("expected '" + c + "'");
                Pos++;
            }

            Dictionary<string, object> Object(int depth)
            {
                var o = new Dictionary<string, object>();
                Pos++;
                Space();
                if (Pos < s.Length && s[Pos] == '}') { Pos++; return o; }
                for (;;)
                {
                    Space();
                    if (Pos >= s.Length || s[Pos] != '"') throw Error("expected a field name");
                    var key = String();
                    Space();
                    Expect(':');
                    Space();
                    o[key] = Value(depth + 1);
                    Space();
                    if (Pos < s.Length && s[Pos] == ',') { Pos++; continue; }
                    Expect('}');
                    return o;
                }
            }

            List<object> Array(int depth)
            {
                var a = new List<object>();
                Pos++;
                Space();
                if (Pos < s.Length && s[Pos] == ']') { Pos++; return a; }
                for (;;)
                {
                    Space();
                    a.Add(Value(depth + 1));
                    Space();
                    if (Pos < s.Length && s[Pos] == ',') { Pos++; continue; }
                    Expect(']');
                    return a;
                }
            }

            string String()
            {
                Pos++; // the opening quote
                StringBuilder sb = null;
                var start = Pos;
                for (;;)
                {
                    if (Pos >= s.Length) throw Error("unterminated string");
                    var c = s[Pos];
                    if (c == '"')
                    {
                        var tail = s.Substring(start, Pos - start);
                        Pos++;
                        return sb == null ? tail : sb.Append(tail).ToString();
                    }
                    if (c < ' ') throw Error("control character in a string");
                    if (c != '\\') { Pos++; continue; }
                    sb = sb ?? new StringBuilder();
                    sb.Append(s, start, Pos - start);
                    Pos++;
                    if (Pos >= s.Length) throw Error("unterminated string");
                    switch (s[Pos])
                    {
                        case '"': sb.Append('"'); break;
                        case '\\': sb.Append('\\'); break;
                        case '/': sb.Append('/'); break;
                        case 'b': sb.Append('\b'); break;
                        case 'f': sb.Append('\f'); break;
                        case 'n': sb.Append('\n'); break;
                        case 'r': sb.Append('\r'); break;
                        case 't': sb.Append('\t'); break;
                        case 'u':
                            if (Pos + 4 >= s.Length || !int.TryParse(s.Substring(Pos + 1, 4), NumberStyles.AllowHexSpecifier, CultureInfo.InvariantCulture, out var code))
                                throw Error("bad \\u escape");
                            sb.Append((char)code);
                            Pos += 4;
                            break;
                        default: throw Error("bad escape");
                    }
                    Pos++;
                    start = Pos;
                }
            }

            object Number()
            {
                var start = Pos;
                if (Pos < s.Length && s[Pos] == '-') Pos++;
                var digits = Pos;
                while (Pos < s.Length && s[Pos] >= '0' && s[Pos] <= '9') Pos++;
                if (Pos == digits) throw Error("unexpected character");
                var integer = true;
                if (Pos < s.Length && s[Pos] == '.')
                {
                    integer = false;
                    Pos++;
                    var frac = Pos;
                    while (Pos < s.Length && s[Pos] >= '0' && s[Pos] <= '9') Pos++;
                    if (Pos == frac) throw Error("a number's fraction has no digit");
                }
                if (Pos < s.Length && (s[Pos] == 'e' || s[Pos] == 'E'))
                {
                    integer = false;
                    Pos++;
                    if (Pos < s.Length && (s[Pos] == '+' || s[Pos] == '-')) Pos++;
                    var exp = Pos;
                    while (Pos < s.Length && s[Pos] >= '0' && s[Pos] <= '9') Pos++;
                    if (Pos == exp) throw Error("a number's exponent has no digit");
                }
                var text = s.Substring(start, Pos - start);
                if (integer && long.TryParse(text, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out var l)) return l;
                return double.Parse(text, NumberStyles.Float, CultureInfo.InvariantCulture);
            }
        }
    }

    /// <summary>
    /// A decoded JSON object read field by field, for the models: a field missing or null reads
    /// as null (a number or boolean the API always sends as its type's default); a field of
    /// another type is a <see cref="FormatException"/> naming it.
    /// </summary>
    internal sealed class JsonObject
    {
        readonly IDictionary<string, object> fields;

        JsonObject(IDictionary<string, object> fields) { this.fields = fields; }

        /// <summary>value as an object; anything else is a FormatException naming what.</summary>
        public static JsonObject Of(object value, string what)
        {
            if (value is IDictionary<string, object> o) return new JsonObject(o);
            throw new FormatException("laurel's answer: " + what + " is not a JSON object");
        }

        /// <summary>The object itself, every field as <see cref="Json.Parse"/> read it.</summary>
        public IDictionary<string, object> Whole => fields;

        object Get(string name) => fields.TryGetValue(name, out var v) ? v : null;

        T As<T>(string name, object v)
        {
            if (v is T t) return t;
            throw new FormatException("laurel's answer: field " + name + " is not a " + typeof(T).Name + " but " + v.GetType().Name);
        }

        public bool Has(string name) => Get(name) != null;

        public string String(string name)
        {
            var v = Get(name);
            return v == null ? null : As<string>(name, v);
        }

        public long? LongOrNull(string name)
        {
            var v = Get(name);
            return v == null ? (long?)null : As<long>(name, v);
        }

        public long Long(string name) => LongOrNull(name) ?? 0;

        public int? IntOrNull(string name)
        {
            var v = LongOrNull(name);
            return v == null ? (int?)null : checked((int)v.Value);
        }

        public int Int(string name) => IntOrNull(name) ?? 0;

        public double? DoubleOrNull(string name)
        {
            var v = Get(name);
            if (v == null) return null;
            if (v is long l) return l;
            return As<double>(name, v);
        }

        public bool? BoolOrNull(string name)
        {
            var v = Get(name);
            return v == null ? (bool?)null : As<bool>(name, v);
        }

        public bool Bool(string name) => BoolOrNull(name) ?? false;

        public DateTimeOffset? TimeOrNull(string name)
        {
            var s = String(name);
            if (s == null) return null;
            if (!DateTimeOffset.TryParse(s, CultureInfo.InvariantCulture, DateTimeStyles.AssumeUniversal, out var t))
                throw new FormatException("laurel's answer: field " + name + " is not an RFC 3339 time: " + s);
            return t;
        }

        public DateTimeOffset Time(string name) => TimeOrNull(name) ?? default(DateTimeOffset);

        /// <summary>Any JSON value (a tag), as <see cref="Json.Parse"/> reads it; null when missing.</summary>
        public object Any(string name) => Get(name);

        /// <summary>A free-form object (metadata, a reward), as <see cref="Json.Parse"/> reads it.</summary>
        public IDictionary<string, object> Free(string name)
        {
            var v = Get(name);
            return v == null ? null : As<IDictionary<string, object>>(name, v);
        }

        public T One<T>(string name, Func<JsonObject, T> from) where T : class
        {
            var v = Get(name);
            return v == null ? null : from(Of(v, "field " + name));
        }

        public IReadOnlyList<T> List<T>(string name, Func<JsonObject, T> from)
        {
            var v = Get(name);
            if (v == null) return null;
            var list = new List<T>();
            foreach (var item in As<List<object>>(name, v)) list.Add(from(Of(item, "an item of " + name)));
            return list;
        }

        public List<string> Strings(string name)
        {
            var v = Get(name);
            if (v == null) return null;
            var list = new List<string>();
            foreach (var item in As<List<object>>(name, v)) list.Add(As<string>(name, item));
            return list;
        }

        public List<int> Ints(string name)
        {
            var v = Get(name);
            if (v == null) return null;
            var list = new List<int>();
            foreach (var item in As<List<object>>(name, v)) list.Add(checked((int)As<long>(name, item)));
            return list;
        }

        public IReadOnlyDictionary<string, T> Map<T>(string name, Func<JsonObject, T> from)
        {
            var v = Get(name);
            if (v == null) return null;
            var map = new Dictionary<string, T>();
            foreach (var kv in As<IDictionary<string, object>>(name, v)) map[kv.Key] = from(Of(kv.Value, name + "." + kv.Key));
            return map;
        }
    }
}
