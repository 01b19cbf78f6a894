package laureltest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// DumpHeader is the first line of a dump of this build.
const DumpHeader = `{"laurel_dump":3}`

// SealDump makes a dump of lines written by hand (the header first): it joins them and adds
// the trailer that laurel.DumpReader checks, as laurel.DumpWriter.Close does.
func SealDump(lines ...string) []byte {
	body := strings.Join(lines, "\n") + "\n"
	sum := sha256.Sum256([]byte(body))
	return []byte(body + fmt.Sprintf(`{"end":{"records":%d,"sha256":%q}}`+"\n", len(lines)-1, hex.EncodeToString(sum[:])))
}
