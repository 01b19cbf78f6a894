// The live page and a member's live standing: server-sent-event streams read over HttpClient, so that it can send the key
// in a header, and reconnected by itself as the JavaScript client's is.
using System;
using System.Collections.Generic;
using System.IO;
using System.Net.Http;
using System.Runtime.ExceptionServices;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace Laurel
{
    public sealed partial class LaurelClient
    {
        /// <summary>
        /// Follows a board's live top page: calls onPage with the current Page, then with each
        /// change, until cancellationToken is cancelled, when the task completes (cancelling is
        /// how a stream ends: it does not throw). Awaited without ConfigureAwait(false) inside,
        /// so onPage runs in the caller's SynchronizationContext: on Unity's main thread when
        /// started from it. It reconnects by itself: after the server's Retry-After, backing off
        /// (from 0.1 s, doubling to <see cref="MaxDelay"/>) while connections end without a page,
        /// and when nothing, not even the server's ping every 15 s, arrives for idleTimeout
        /// (default 45 s), as when a connection died without closing.
        /// It throws a <see cref="LaurelException"/> for what connecting again would not mend: a
        /// refusal (an unknown board or window, a key refused) and the server's end of the stream
        /// (its board deleted: not_found; the member token it was opened with expired:
        /// unauthenticated, to start again with a fresh <see cref="Key"/>); and what onPage throws.
        /// </summary>
        /// <param name="window">The window followed; null: the board's first.</param>
        /// <param name="cohort">Rank the members of this member's cohort among themselves.</param>
        /// <param name="limit">The top entries followed (default 10, at most 100).</param>
        public async Task StreamPageAsync(string board, Action<Page> onPage, string window = null, string cohort = null, int? limit = null,
            bool metadata = false, TimeSpan? idleTimeout = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            if (onPage == null) throw new ArgumentNullException(nameof(onPage));
            var path = "/v1/boards/" + Seg(board) + "/stream";
            var query = new Query().Add("window", window).Add("cohort", cohort).Add("limit", limit).Flag("metadata", metadata, "true");
            await FollowStream(path, query, "page", Page.Read, onPage, idleTimeout, cancellationToken);
        }

        /// <summary>
        /// Follows one member's standing on a board: calls onStanding with its standing in each
        /// window (or the one window names), then each time its rank or score in a window
        /// changes, with the previous standing and who passed it (PassedBy) or whom it passed
        /// (Passed) when one member alone did. It runs, reconnects, ends and throws as
        /// <see cref="StreamPageAsync"/> does; a new connection starts with the current
        /// standings again.
        /// </summary>
        /// <param name="window">The window followed; null: every window of the board.</param>
        public async Task StreamMemberAsync(string board, string member, Action<MemberStanding> onStanding, string window = null,
            TimeSpan? idleTimeout = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            if (onStanding == null) throw new ArgumentNullException(nameof(onStanding));
            var path = "/v1/boards/" + Seg(board) + "/members/" + Seg(member) + "/stream";
            await FollowStream(path, new Query().Add("window", window), "standing", MemberStanding.Read, onStanding, idleTimeout, cancellationToken);
        }

        // FollowStream follows a live stream's events of one name, reconnecting, until cancelled.
        async Task FollowStream<T>(string path, Query query, string name, Func<JsonObject, T> read, Action<T> on, TimeSpan? idleTimeout,
            CancellationToken cancellationToken) where T : class
        {
            CheckPath(path);
            var uri = Url + path + query;
            var idle = idleTimeout ?? TimeSpan.FromSeconds(45);
            for (var attempt = 0; !cancellationToken.IsCancellationRequested; attempt++)
            {
                LaurelException refused = null; // a 503 or 429, whose Retry-After says when to connect again
                try
                {
                    if (await Follow(uri, name, read, on, idle, cancellationToken)) attempt = 0;
                }
                catch (LaurelException e) when (e.Retryable)
                {
                    refused = e;
                }
                catch (CallerFault f)
                {
                    ExceptionDispatchInfo.Capture(f.InnerException).Throw();
                }
                if (cancellationToken.IsCancellationRequested) return;
                try
                {
                    await Task.Delay(Wait(refused, attempt), cancellationToken);
                }
                catch (OperationCanceledException)
                {
                    return;
                }
            }
        }

        // Follow reads one connection of a stream until it ends, breaks, goes quiet for idle or
        // the caller cancels, and says whether it brought an event of the name.
        async Task<bool> Follow<T>(string uri, string name, Func<JsonObject, T> read, Action<T> on, TimeSpan idle, CancellationToken cancellationToken)
            where T : class
        {
            var paged = false;
            using (var conn = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken))
            using (var request = NewRequest(HttpMethod.Get, uri))
            {
                request.Headers.Accept.ParseAdd("text/event-stream");
                conn.CancelAfter(idle);
                HttpResponseMessage res = null;
                try
                {
                    res = await http.SendAsync(request, HttpCompletionOption.ResponseHeadersRead, conn.Token);
                    // Closing the answer ends a read of its body that a handler does not end
                    // when the token is cancelled.
                    using (conn.Token.Register(res.Dispose))
                    {
                        if (!res.IsSuccessStatusCode) throw ErrorOf(res, await res.Content.ReadAsStringAsync());
                        using (var body = await res.Content.ReadAsStreamAsync())
                        {
                            var reader = new LineReader(body);
                            var events = new ServerEvents();
                            for (string line; (line = await reader.ReadLine(conn.Token)) != null;)
                            {
                                conn.CancelAfter(idle);
                                if (!events.Take(line)) continue;
                                if (events.Name == "error") throw StreamError(events.Data);
                                if (events.Name != name) continue;
                                T page;
                                try
                                {
                                    page = One(read)(events.Data);
                                }
                                catch (FormatException e)
                                {
                                    throw new LaurelException(200, ErrorCodes.Internal, "laurel: a live " + name + " this client cannot read: " + e.Message, innerException: e);
                                }
                                paged = true;
                                conn.CancelAfter(System.Threading.Timeout.Infinite); // the caller's time with a page is not the connection's
                                try
                                {
                                    on(page);
                                }
                                catch (Exception e)
                                {
                                    throw new CallerFault(e);
                                }
                                conn.CancelAfter(idle);
                            }
                        }
                    }
                }
                catch (Exception e) when (!(e is LaurelException) && !(e is CallerFault) &&
                    (cancellationToken.IsCancellationRequested || e is OperationCanceledException || e is ObjectDisposedException || Unreachable(e)))
                {
                    // the connection broke, or went quiet, or the caller is done: the loop decides
                }
                finally
                {
                    res?.Dispose();
                }
            }
            return paged;
        }

        // StreamError is the error a stream ended with (data: the API's error body).
        static LaurelException StreamError(string data)
        {
            try
            {
                var e = JsonObject.Of(Json.Parse(data), "the stream's error").One("error", o => o);
                var code = e.String("code") ?? ErrorCodes.Internal;
                return new LaurelException(LaurelException.StatusOf(code), code, e.String("message") ?? "laurel: the stream ended", e.String("field"));
            }
            catch (FormatException)
            {
                return new LaurelException(500, ErrorCodes.Internal, "laurel: the stream ended with an error this client cannot read: " + data);
            }
        }

        /// <summary>What onPage threw, carried out of the connection's loop as it is.</summary>
        sealed class CallerFault : Exception
        {
            public CallerFault(Exception inner) : base(inner.Message, inner) { }
        }

        /// <summary>
        /// Reads a body line by line (ended by \r\n, \n or \r), each read taking the
        /// connection's token: Mono's handler ends such a read at once, where closing the body
        /// (all StreamReader.ReadLineAsync would leave) takes it seconds.
        /// </summary>
        sealed class LineReader
        {
            readonly Stream body;
            readonly Decoder utf8 = new UTF8Encoding(false).GetDecoder();
            readonly byte[] bytes = new byte[8192];
            readonly char[] chars = new char[Encoding.UTF8.GetMaxCharCount(8192)];
            readonly StringBuilder line = new StringBuilder();
            readonly Queue<string> lines = new Queue<string>();
            bool afterCR;

            public LineReader(Stream body) { this.body = body; }

            /// <summary>The next line, or null when the body ends.</summary>
            public async Task<string> ReadLine(CancellationToken cancellationToken)
            {
                while (lines.Count == 0)
                {
                    var n = await body.ReadAsync(bytes, 0, bytes.Length, cancellationToken);
                    if (n == 0) return null;
                    var count = utf8.GetChars(bytes, 0, n, chars, 0);
                    for (var i = 0; i < count; i++)
                    {
                        var c = chars[i];
                        if (c == '\n' && afterCR)
                        {
                            afterCR = false;
                            continue;
                        }
                        afterCR = c == '\r';
                        if (c == '\n' || c == '\r')
                        {
                            lines.Enqueue(line.ToString());
                            line.Clear();
                        }
                        else
                        {
                            line.Append(c);
                        }
                    }
                }
                return lines.Dequeue();
            }
        }

        /// <summary>Parses text/event-stream lines into events (the fields laurel sends: event and data).</summary>
        sealed class ServerEvents
        {
            readonly StringBuilder data = new StringBuilder();
            bool hasData;
            string name = "message";

            /// <summary>The name and data of the event Take last completed.</summary>
            public string Name { get; private set; }
            public string Data { get; private set; }

            /// <summary>Takes one line and says whether it completed an event.</summary>
            public bool Take(string line)
            {
                if (line == "")
                {
                    var done = hasData;
                    if (done)
                    {
                        Name = name;
                        Data = data.ToString();
                    }
                    name = "message";
                    data.Clear();
                    hasData = false;
                    return done;
                }
                if (line[0] == ':') return false; // a comment: the server's keep-alive
                var colon = line.IndexOf(':');
                var field = colon < 0 ? line : line.Substring(0, colon);
                var value = colon < 0 ? "" : line.Substring(colon + 1);
                if (value.StartsWith(" ", StringComparison.Ordinal)) value = value.Substring(1);
                if (field == "event") name = value;
                else if (field == "data")
                {
                    if (hasData) data.Append('\n');
                    data.Append(value);
                    hasData = true;
                }
                return false;
            }
        }
    }
}
