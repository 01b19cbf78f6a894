// A client of laurel's HTTP API (docs/api.md in laurel's repository) for .NET Standard 2.0:
// Unity 2019.4 and later, and any .NET. Its methods are the API's operationIds (GET
// /openapi.json) in PascalCase with the .NET suffix Async, so that the two can be checked
// against each other; this file holds what they share: the transport, errors and retries.
using System;
using System.Collections.Generic;
using System.IO;
using System.Net;
using System.Net.Http;
using System.Net.Http.Headers;
using System.Net.Sockets;
using System.Runtime.CompilerServices;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

[assembly: InternalsVisibleTo("LaurelTests")]

namespace Laurel
{
    /// <summary>
    /// A client of one laurel server. Make one and keep it: it is safe to use from several
    /// threads at once. Every call returns the decoded answer or throws a
    /// <see cref="LaurelException"/> with the API's error code; a call whose token is cancelled
    /// throws <see cref="OperationCanceledException"/>.
    /// </summary>
    public sealed partial class LaurelClient
    {
        // One HttpClient for every LaurelClient not given one, so that clients made per player
        // or per token share its connections. Its own timeout is off: Timeout below applies
        // per attempt, and a live stream has its own.
        static readonly HttpClient shared = new HttpClient { Timeout = System.Threading.Timeout.InfiniteTimeSpan };

        readonly HttpClient http;

        /// <summary>laurel's base URL, without a trailing slash.</summary>
        public string Url { get; }

        /// <summary>
        /// An API key or a member token, sent as "Authorization: Bearer &lt;key&gt;"; null sends none.
        /// It may be changed at any time (a fresh token): each request reads it as it starts.
        /// </summary>
        public string Key { get; set; }

        /// <summary>
        /// How often a call is tried again after 503, 429 or a failure to reach laurel (default
        /// 3). 0 turns retries off, and with them the ids given to events without one.
        /// </summary>
        public int Retries { get; set; } = 3;

        /// <summary>The longest wait before a retry (default 10 s), the server's Retry-After included.</summary>
        public TimeSpan MaxDelay { get; set; } = TimeSpan.FromSeconds(10);

        /// <summary>
        /// How long one attempt of a call may take, answer included (default 30 s); an attempt
        /// that takes longer fails as unreachable (Status 0, "unavailable") and is tried again.
        /// Live streams have their own idle timeout instead.
        /// </summary>
        public TimeSpan Timeout { get; set; } = TimeSpan.FromSeconds(30);

        /// <param name="url">laurel's base URL, such as "https://laurel.example" or "http://127.0.0.1:7300".</param>
        /// <param name="key">An API key or a member token (<see cref="Key"/>).</param>
        /// <param name="httpClient">
        /// The HttpClient to send with (its handler decides proxies, certificates, cookies); by
        /// default one shared by every LaurelClient. Its own Timeout should be longer than
        /// <see cref="Timeout"/> and than a live stream's idle timeout, or infinite.
        /// </param>
        public LaurelClient(string url, string key = null, HttpClient httpClient = null)
        {
            if (!Uri.TryCreate(url, UriKind.Absolute, out var u) || (u.Scheme != "http" && u.Scheme != "https"))
                throw new ArgumentException("laurel: url must be an absolute http or https URL, such as http://127.0.0.1:7300", nameof(url));
            Url = url.TrimEnd('/');
            Key = key;
            http = httpClient ?? shared;
        }

        // Request sends one call, again after retryable failures, waiting as the server's
        // Retry-After says (or backing off), and returns its answer decoded.
        async Task<T> Request<T>(HttpMethod method, string path, Query query, object body, Func<string, T> decode, CancellationToken cancellationToken)
        {
            CheckPath(path);
            var uri = Url + path + query;
            var payload = body == null ? null : Json.Serialize(body);
            for (var attempt = 0; ; attempt++)
            {
                LaurelException failed;
                try
                {
                    return await Once(method, uri, payload, decode, cancellationToken).ConfigureAwait(false);
                }
                catch (LaurelException e) when (e.Retryable && attempt < Retries)
                {
                    failed = e;
                }
                await Task.Delay(Wait(failed, attempt), cancellationToken).ConfigureAwait(false);
            }
        }

        async Task<T> Once<T>(HttpMethod method, string uri, string payload, Func<string, T> decode, CancellationToken cancellationToken)
        {
            cancellationToken.ThrowIfCancellationRequested();
            using (var request = NewRequest(method, uri))
            using (var attempt = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken))
            {
                if (payload != null) request.Content = new StringContent(payload, Encoding.UTF8, "application/json");
                attempt.CancelAfter(Timeout);
                HttpResponseMessage res;
                byte[] bytes;
                try
                {
                    res = await http.SendAsync(request, HttpCompletionOption.ResponseContentRead, attempt.Token).ConfigureAwait(false);
                    bytes = res.Content == null ? new byte[0] : await res.Content.ReadAsByteArrayAsync().ConfigureAwait(false);
                }
                catch (Exception e) when (cancellationToken.IsCancellationRequested && (e is OperationCanceledException || Unreachable(e)))
                {
                    throw new OperationCanceledException("laurel: the call was cancelled", e, cancellationToken);
                }
                catch (OperationCanceledException)
                {
                    throw new LaurelException(0, ErrorCodes.Unavailable, "laurel: no answer from " + Url + " within " + Timeout);
                }
                catch (Exception e) when (Unreachable(e))
                {
                    throw new LaurelException(0, ErrorCodes.Unavailable, "laurel: cannot reach " + Url + ": " + Innermost(e).Message, innerException: e);
                }
                using (res)
                {
                    var text = Encoding.UTF8.GetString(bytes);
                    if (!res.IsSuccessStatusCode) throw ErrorOf(res, text);
                    try
                    {
                        return decode(text);
                    }
                    catch (Exception e) when (e is FormatException || e is OverflowException)
                    {
                        throw new LaurelException((int)res.StatusCode, ErrorCodes.Internal, "laurel: an answer this client cannot read: " + e.Message, innerException: e);
                    }
                }
            }
        }

        HttpRequestMessage NewRequest(HttpMethod method, string uri)
        {
            var request = new HttpRequestMessage(method, uri);
            var key = Key;
            if (!string.IsNullOrEmpty(key)) request.Headers.Authorization = new AuthenticationHeaderValue("Bearer", key);
            return request;
        }

        // Unreachable tells the failures of the transport (no connection, a connection lost,
        // no name) from the client's own faults, which a retry would not mend.
        static bool Unreachable(Exception e) => e is HttpRequestException || e is IOException || e is WebException || e is SocketException;

        static Exception Innermost(Exception e)
        {
            while (e.InnerException != null) e = e.InnerException;
            return e;
        }

        // ErrorOf reads an answer that is not 2xx into a LaurelException.
        static LaurelException ErrorOf(HttpResponseMessage res, string text)
        {
            var status = (int)res.StatusCode;
            string code = null, message = null, field = null;
            try
            {
                var e = JsonObject.Of(Json.Parse(text), "the answer").One("error", o => o);
                if (e != null)
                {
                    code = e.String("code");
                    message = e.String("message");
                    field = e.String("field");
                }
            }
            catch (FormatException)
            {
                // not the API's error: a proxy's page, say
            }
            return new LaurelException(status, code ?? LaurelException.CodeOf(status),
                message ?? "laurel: " + status + " " + (text.Length > 200 ? text.Substring(0, 200) : text), field, RetryAfterOf(res));
        }

        static TimeSpan? RetryAfterOf(HttpResponseMessage res)
        {
            var after = res.Headers.RetryAfter;
            if (after?.Delta != null) return after.Delta;
            if (after?.Date != null)
            {
                var wait = after.Date.Value - DateTimeOffset.UtcNow;
                return wait > TimeSpan.Zero ? wait : TimeSpan.Zero;
            }
            return null;
        }

        static readonly Random jitter = new Random();

        // Wait is how long to wait before try number attempt+1 after failed: the server's
        // Retry-After or an exponential backoff from 0.1 s, both capped at MaxDelay.
        TimeSpan Wait(LaurelException failed, int attempt)
        {
            if (failed?.RetryAfter != null) return failed.RetryAfter.Value < MaxDelay ? failed.RetryAfter.Value : MaxDelay;
            double spread;
            lock (jitter) spread = 0.5 + jitter.NextDouble();
            var ms = 100 * Math.Pow(2, Math.Min(attempt, 16)) * spread;
            return ms < MaxDelay.TotalMilliseconds ? TimeSpan.FromMilliseconds(ms) : MaxDelay;
        }

        // Seg escapes an id for a path segment. An empty id, "." and ".." are left as they are
        // for CheckPath to refuse, in the call's task.
        static string Seg(string id) => string.IsNullOrEmpty(id) ? "" : Uri.EscapeDataString(id);

        // CheckPath refuses a path with an empty, "." or ".." segment: .NET's Uri drops a dot
        // segment (escaped or not), as fetch does, so that the call would reach another route or
        // another member.
        static void CheckPath(string path)
        {
            var segs = path.Split('/');
            for (var i = 1; i < segs.Length; i++)
            {
                if (segs[i] == "" || segs[i] == "." || segs[i] == "..")
                    throw new LaurelException(400, ErrorCodes.InvalidArgument, "laurel: \"" + segs[i] + "\" cannot be an id: it cannot stand in a URL's path");
            }
        }

        /// <summary>A request's query: its parameters that are set, escaped.</summary>
        sealed class Query
        {
            readonly StringBuilder sb = new StringBuilder();

            public Query Add(string name, string value)
            {
                if (string.IsNullOrEmpty(value)) return this;
                sb.Append(sb.Length == 0 ? '?' : '&').Append(name).Append('=').Append(Uri.EscapeDataString(value));
                return this;
            }

            public Query Add(string name, long? value) =>
                Add(name, value?.ToString(System.Globalization.CultureInfo.InvariantCulture));

            // Flag adds name=value when on: a default the server has otherwise.
            public Query Flag(string name, bool on, string value) => on ? Add(name, value) : this;

            // When adds what a read reads: a window, at an instant or in a period, of a cohort.
            public Query When(string window, DateTimeOffset? at, string period, string cohort) =>
                Add("window", window).Add("at", at == null ? null : Json.Time(at.Value)).Add("period", period).Add("cohort", cohort);

            public override string ToString() => sb.ToString();
        }

        // Decoders of the answers.

        static Func<string, T> One<T>(Func<JsonObject, T> read) => text => read(JsonObject.Of(Json.Parse(text), "the answer"));

        static Func<string, IReadOnlyList<T>> ListOf<T>(string field, Func<JsonObject, T> read) =>
            text => JsonObject.Of(Json.Parse(text), "the answer").List(field, read) ?? new List<T>();

        static readonly Func<string, object> nothing = text => null;
    }
}
