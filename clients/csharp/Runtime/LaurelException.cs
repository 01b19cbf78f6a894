using System;
using System.Collections.Generic;

namespace Laurel
{
    /// <summary>
    /// An error answered by laurel, or a failure to reach it (Status 0, Code "unavailable").
    /// Code is one of <see cref="ErrorCodes"/>.
    /// </summary>
    public sealed class LaurelException : Exception
    {
        /// <summary>The HTTP status; 0 when laurel could not be reached or did not answer in time.</summary>
        public int Status { get; }
        /// <summary>The API's error code, one of <see cref="ErrorCodes"/>.</summary>
        public string Code { get; }
        /// <summary>The input at fault, as the request spelled it (events[1].value, window), when one was.</summary>
        public string Field { get; }
        /// <summary>How long the server asked to wait before trying again, when it said.</summary>
        public TimeSpan? RetryAfter { get; }

        public LaurelException(int status, string code, string message, string field = null, TimeSpan? retryAfter = null, Exception innerException = null)
            : base(message, innerException)
        {
            Status = status;
            Code = code;
            Field = field;
            RetryAfter = retryAfter;
        }

        /// <summary>
        /// Whether the same call may succeed later: the server or its store cannot serve now, this
        /// client sent too much, or a write's outcome is unknown — sent again, it is answered for
        /// what was stored, as the writes this client retries carry event ids (what the client
        /// retries by itself). Anything else would fail the same way again.
        /// </summary>
        public bool Retryable => Code == ErrorCodes.Unavailable || Code == ErrorCodes.RateLimited || Code == ErrorCodes.OutcomeUnknown;

        /// <summary>
        /// The API's code for an answer that is not the API's JSON (a proxy's page, say), from its
        /// status: a gateway's 502 or 504 is unavailable, as laurel's own 503 is.
        /// </summary>
        internal static string CodeOf(int status) =>
            codes.TryGetValue(status, out var code) ? code : status >= 500 ? ErrorCodes.Unavailable : ErrorCodes.InvalidArgument;

        /// <summary>The HTTP status laurel answers with code (docs/api.md, "Errors"), for an error that came without one: a live stream's.</summary>
        internal static int StatusOf(string code)
        {
            if (code == ErrorCodes.TooLate) return 400;
            if (code == ErrorCodes.Unavailable || code == ErrorCodes.OutcomeUnknown) return 503;
            foreach (var kv in codes)
            {
                if (kv.Value == code) return kv.Key;
            }
            return 500;
        }

        static readonly Dictionary<int, string> codes = new Dictionary<int, string>
        {
            [400] = ErrorCodes.InvalidArgument,
            [401] = ErrorCodes.Unauthenticated,
            [403] = ErrorCodes.PermissionDenied,
            [404] = ErrorCodes.NotFound,
            [405] = ErrorCodes.MethodNotAllowed,
            [409] = ErrorCodes.Conflict,
            [422] = ErrorCodes.GuardRefused,
            [413] = ErrorCodes.PayloadTooLarge,
            [429] = ErrorCodes.RateLimited,
            [500] = ErrorCodes.Internal,
        };
    }

    /// <summary>The API's error codes (docs/api.md, "Errors").</summary>
    public static class ErrorCodes
    {
        public const string InvalidArgument = "invalid_argument";
        public const string TooLate = "too_late";
        public const string Unauthenticated = "unauthenticated";
        public const string PermissionDenied = "permission_denied";
        public const string NotFound = "not_found";
        public const string MethodNotAllowed = "method_not_allowed";
        public const string Conflict = "conflict";
        /// <summary>An event breaks a rule of its board's guard; nothing of the write was stored.</summary>
        public const string GuardRefused = "guard_refused";
        public const string PayloadTooLarge = "payload_too_large";
        public const string RateLimited = "rate_limited";
        public const string Unavailable = "unavailable";
        public const string OutcomeUnknown = "outcome_unknown";
        public const string Internal = "internal";
    }
}
