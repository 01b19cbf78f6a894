package main

import (
	"github.com/laurel/laurel/embedded"
	"github.com/prometheus/client_golang/prometheus"
)

// footprintCollector reports, at scrape time, what the embedded store's Pebble databases hold:
// their tables, memtables and block cache, labelled db="store" or db="log".
type footprintCollector struct{ store *embedded.Store }

var (
	tablesDesc = prometheus.NewDesc("laurel_store_tables",
		"Tables in the levels of the embedded store's Pebble database (db=store) and of its log's (db=log).", []string{"db"}, nil)
	memTablesDesc = prometheus.NewDesc("laurel_store_memtable_bytes",
		"Bytes of the memtables (and flushable batches) of each Pebble database, outside the Go heap.", []string{"db"}, nil)
	blockCacheDesc = prometheus.NewDesc("laurel_store_block_cache_bytes",
		"Bytes held by the block cache of each Pebble database, outside the Go heap.", []string{"db"}, nil)
	idFilterDesc = prometheus.NewDesc("laurel_store_id_filter_bytes",
		"Bytes of the embedded store's event id filter, on the Go heap: it grows with every event id stored (1.5 to 3 bytes an id).", nil, nil)
)

func (c footprintCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- tablesDesc
	ch <- memTablesDesc
	ch <- blockCacheDesc
	ch <- idFilterDesc
}

func (c footprintCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.store.Footprint()
	for db, p := range map[string]embedded.PebbleFootprint{"store": f.Store, "log": f.Log} {
		ch <- prometheus.MustNewConstMetric(tablesDesc, prometheus.GaugeValue, float64(p.Tables), db)
		ch <- prometheus.MustNewConstMetric(memTablesDesc, prometheus.GaugeValue, float64(p.MemTables), db)
		ch <- prometheus.MustNewConstMetric(blockCacheDesc, prometheus.GaugeValue, float64(p.BlockCache), db)
	}
	ch <- prometheus.MustNewConstMetric(idFilterDesc, prometheus.GaugeValue, float64(f.IDFilter))
}
