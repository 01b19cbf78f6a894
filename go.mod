module github.com/laurel/laurel

go 1.26
