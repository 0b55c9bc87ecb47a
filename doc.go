// Package spyder holds the vocabulary of spyder's output: the graph's
// nodes and edges ([DomainNode], [IPNode], [CertNode], [Edge]), the
// [Batch] that carries them as one line of output, how each step of a
// host's visit ended ([HostOutcome], [StepOutcome]), and the program's
// [Version].
//
// It holds plain types and imports nothing of spyder's but package host,
// so that whatever reads or writes the output (the crawler that makes it,
// the sinks and stores that carry it, the graph tools that read it) shares
// these types without importing the crawler. The JSON field names are the
// older spyder's, so its graph readers keep working.
package spyder
