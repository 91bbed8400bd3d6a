module github.com/ringflake/ringflake

go 1.25.0
