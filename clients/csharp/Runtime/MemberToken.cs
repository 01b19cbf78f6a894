using System;
using System.Collections.Generic;
using System.Security.Cryptography;
using System.Text;

namespace Laurel
{
    /// <summary>
    /// Member tokens (docs/api.md, "Member tokens"): what a game's client sends instead of a key,
    /// minted by the game's own server, which knows the player.
    /// </summary>
    public static class MemberToken
    {
        /// <summary>
        /// Signs a member token (an HS256 JWT) for one member and some boards, as a game's own
        /// server does, so that the game's client can read those boards and submit that member's
        /// events: pass it to the client as its key. Keep the secret on the server: never mint
        /// in a game's client.
        /// </summary>
        /// <param name="secret">One of laurel's LAUREL_TOKEN_SECRETS (at least 32 bytes), as UTF-8 text.</param>
        /// <param name="kid">The secret's name there; null when laurel has a single secret.</param>
        /// <param name="scope">"write" (read and submit the member's events) or "read".</param>
        /// <param name="ttl">How long it lives (default an hour; laurel takes at most its -token-max-lifetime, 24 h by default).</param>
        /// <param name="audience">laurel's -token-audience.</param>
        /// <param name="now">When it is issued (default now).</param>
        public static string Mint(string secret, string member, IEnumerable<string> boards, string kid = null, string scope = "write",
            TimeSpan? ttl = null, string audience = "laurel", DateTimeOffset? now = null)
        {
            if (string.IsNullOrEmpty(secret)) throw new ArgumentException("laurel: a member token needs the secret", nameof(secret));
            return Mint(Encoding.UTF8.GetBytes(secret), member, boards, kid, scope, ttl, audience, now);
        }

        /// <summary>Signs a member token with a secret of raw bytes.</summary>
        public static string Mint(byte[] secret, string member, IEnumerable<string> boards, string kid = null, string scope = "write",
            TimeSpan? ttl = null, string audience = "laurel", DateTimeOffset? now = null)
        {
            if (secret == null || secret.Length == 0) throw new ArgumentException("laurel: a member token needs the secret", nameof(secret));
            if (string.IsNullOrEmpty(member)) throw new ArgumentException("laurel: a member token needs the member", nameof(member));
            var list = boards == null ? new List<string>() : new List<string>(boards);
            if (list.Count == 0) throw new ArgumentException("laurel: a member token needs its boards", nameof(boards));
            var iat = (now ?? DateTimeOffset.UtcNow).ToUnixTimeSeconds();
            var header = new Dictionary<string, object> { ["alg"] = "HS256", ["typ"] = "JWT" };
            if (!string.IsNullOrEmpty(kid)) header["kid"] = kid;
            var payload = new Dictionary<string, object>
            {
                ["sub"] = member,
                ["aud"] = audience,
                ["iat"] = iat,
                ["exp"] = iat + (long)(ttl ?? TimeSpan.FromHours(1)).TotalSeconds,
                ["boards"] = list,
                ["scope"] = scope,
            };
            var signing = Base64Url(Encoding.UTF8.GetBytes(Json.Serialize(header))) + "." + Base64Url(Encoding.UTF8.GetBytes(Json.Serialize(payload)));
            using (var hmac = new HMACSHA256(secret))
            {
                return signing + "." + Base64Url(hmac.ComputeHash(Encoding.ASCII.GetBytes(signing)));
            }
        }

        static string Base64Url(byte[] bytes) => Convert.ToBase64String(bytes).TrimEnd('=').Replace('+', '-').Replace('/', '_');
    }
}
