// Package movein holds the tests of docs/moving-in.md: that the layouts the
// CLI names after the generators ringflake replaces (internal/peerlayout)
// read those generators' IDs bit for bit, built by the peers' own Go code
// where it exists (bwmarrin/snowflake, sonyflake v1 and v2) and by the
// formula of their source where it does not (Twitter's Snowflake, Meituan
// Leaf, Baidu's uid-generator); and that a running fleet switches to
// ringflake with the recipe of the doc without a collision and without an
// ID below the old fleet's newest. It lives in the benchmarks module, which
// may depend on the peers; the root module may not. It has no code of its
// own outside the tests.
package movein
