package redistest

import (
	"fmt"
	"os"
	"path/filepath"
)

// Wipe deletes the server's persisted data (its RDB file and append-only
// directory), so that the next [Server.Restart] comes back empty, as a
// Redis whose disk was lost does. The server must be stopped.
func (s *Server) Wipe() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return fmt.Errorf("redistest: wipe %s while it runs", s.Addr)
	}
	for _, name := range []string{"dump.rdb", "appendonlydir", "appendonly.aof"} {
		if err := os.RemoveAll(filepath.Join(s.dir, name)); err != nil {
			return fmt.Errorf("redistest: wipe: %w", err)
		}
	}
	return nil
}
