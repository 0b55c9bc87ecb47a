package sink

// SetJournalCreated makes f run inside newJournal, after the journal is
// created and locked and before it takes its .jsonl name, until the test
// ends: tests put another probe's recovery at that point.
func SetJournalCreated(t interface{ Cleanup(func()) }, f func()) {
	journalCreated = f
	t.Cleanup(func() { journalCreated = nil })
}

// SetJournalOpened makes f run inside recovery, after a journal is opened
// and before it is locked, until the test ends.
func SetJournalOpened(t interface{ Cleanup(func()) }, f func()) {
	journalOpened = f
	t.Cleanup(func() { journalOpened = nil })
}
