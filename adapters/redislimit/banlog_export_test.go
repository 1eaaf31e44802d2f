package redislimit

// BanLogKey is banLogKey, for the external tests that write the ban log
// as another version or an operator would.
const BanLogKey = banLogKey
