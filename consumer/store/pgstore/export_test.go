package pgstore

// LockKey exposes lockKey to the package's external tests.
var LockKey = lockKey
