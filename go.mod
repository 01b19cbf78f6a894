module github.com/laurel/laurel

go 1.26

require github.com/tidwall/btree v1.8.2
