// Package redisstore is the Redis backend of spyder: the work queue a fleet
// of probes shares, its seen set, and the fleet-wide rate limiter.
package redisstore
