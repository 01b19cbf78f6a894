package http

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/laurel/laurel"
	laureljs "github.com/laurel/laurel/clients/js"
)

// web holds the page laurel serves itself: one HTML shell for /, /boards/{board} and the admin
// console at /admin, and the assets it loads, the JavaScript client (clients/js) among them as
// laurel.js. Plain files, no build step.
//
//go:embed web
var web embed.FS

// webFile is an embedded file ready to serve.
type webFile struct {
	body  []byte
	etag  string
	ctype string
}

var webTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
}

// webVersion names the current assets. The page asks for /assets/…?v=webVersion, so a browser
// may cache those for good and still loads the new ones after an upgrade.
var webVersion, webPage, webAssets = loadWeb()

func loadWeb() (string, webFile, map[string]webFile) {
	file := func(name string, b []byte) webFile {
		sum := sha256.Sum256(b)
		ct, ok := webTypes[path.Ext(name)]
		if !ok {
			ct = "application/octet-stream"
		}
		return webFile{body: b, etag: `"` + hex.EncodeToString(sum[:8]) + `"`, ctype: ct}
	}
	all := sha256.New()
	assets := map[string]webFile{}
	err := fs.WalkDir(web, "web/assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := web.ReadFile(p)
		if err != nil {
			return err
		}
		all.Write([]byte(p))
		all.Write(b)
		assets[strings.TrimPrefix(p, "web/assets/")] = file(p, b)
		return nil
	})
	if err != nil {
		panic(err)
	}
	// The JavaScript client, as clients/js has it: the pages call the API through it.
	all.Write([]byte("laurel.js"))
	all.Write(laureljs.Source)
	assets["laurel.js"] = file("laurel.js", laureljs.Source)
	v := hex.EncodeToString(all.Sum(nil))[:16]
	page, err := web.ReadFile("web/index.html")
	if err != nil {
		panic(err)
	}
	return v, file("index.html", bytes.ReplaceAll(page, []byte("{{v}}"), []byte(v))), assets
}

// webCSP lets the page load only its own assets and talk only to its own server.
const webCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'self'"

// routeWeb registers the web page's routes. They need no key: the page holds no data, and
// reads what it shows through the API, with the key its URL gives (?key=).
func (s *Server) routeWeb() {
	s.handle("GET /{$}", scopeNone, serveWebPage)
	s.handle("GET /boards/{board}", scopeNone, serveWebPage)
	s.handle("GET /admin", scopeNone, serveWebPage) // the console asks for its key itself
	s.handle("GET /assets/{file...}", scopeNone, s.serveWebAsset)
}

func serveWebPage(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", webCSP)
	// The page URL may hold a key: never pass it on.
	h.Set("Referrer-Policy", "no-referrer")
	serveWeb(w, r, webPage, "no-cache")
}

func (s *Server) serveWebAsset(w http.ResponseWriter, r *http.Request) {
	f, ok := webAssets[r.PathValue("file")]
	if !ok {
		s.writeError(w, r, laurel.Errorf(laurel.ENotFound, "no such asset: %s", r.PathValue("file")))
		return
	}
	cache := "no-cache"
	if r.URL.Query().Get("v") == webVersion {
		cache = "public, max-age=31536000, immutable"
	}
	serveWeb(w, r, f, cache)
}

func serveWeb(w http.ResponseWriter, r *http.Request, f webFile, cache string) {
	h := w.Header()
	h.Set("Content-Type", f.ctype)
	h.Set("Cache-Control", cache)
	h.Set("ETag", f.etag)
	h.Set("X-Content-Type-Options", "nosniff")
	// ServeContent answers If-None-Match with 304, and HEAD.
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
}
