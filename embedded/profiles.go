package embedded

import (
	"encoding/json"
	"sync"
)

// profileCache keeps recently read profiles, and the knowledge that a member has none, in
// memory: every page shows names, and the top of a board is read over and over. Readers fill
// it while holding the store's read lock and the writer changes it under the write lock, so
// a reader never stores a profile older than one the writer has set.
type profileCache struct {
	mu  sync.Mutex
	max int
	m   map[string]*profile // nil: the member has no profile
}

func newProfileCache(max int) *profileCache {
	return &profileCache{max: max, m: make(map[string]*profile)}
}

func (c *profileCache) get(member string) (*profile, bool) {
	c.mu.Lock()
	p, ok := c.m[member]
	c.mu.Unlock()
	return p, ok
}

func (c *profileCache) put(member string, p *profile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[member]; !ok && len(c.m) >= c.max {
		for k := range c.m { // map iteration starts at random: a random victim
			delete(c.m, k)
			break
		}
	}
	c.m[member] = p
}

// profile returns a member's stored profile, nil when it has none, under the read lock.
func (s *Store) profile(member string) (*profile, error) {
	if p, ok := s.profiles.get(member); ok {
		return p, nil
	}
	v, ok, err := get(s.snap, key(tagProfile, member))
	if err != nil {
		return nil, err
	}
	var p *profile
	if ok {
		p = new(profile)
		if err := json.Unmarshal(v, p); err != nil {
			return nil, err
		}
	}
	if !s.snapBehind { // a profile the group being applied changed is cached already
		s.profiles.put(member, p)
	}
	return p, nil
}
