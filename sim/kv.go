package sim

// kvCache is a paged KV cache with a prefix cache, after vLLM V1's KVCacheManager and
// BlockPool: fixed-size blocks, reference counts, a hash per full prompt block (chained with
// its parent, so a hit implies the whole prefix matches), and an LRU free queue whose blocks
// keep their hash until they are reused, so freed prefixes can still be hit.
type kvCache struct {
	blockSize int
	total     int
	refcnt    []int32
	hash      []uint64 // 0: no hash (partial block, or output tokens)
	prev      []int32  // free queue links; -1 ends
	next      []int32
	inFree    []bool
	head      int32 // least recently freed: evicted first
	tail      int32
	nfree     int
	cached    map[uint64]int32
	prefix    bool // prefix caching enabled
}

func newKVCache(blocks, blockSize int, prefix bool) *kvCache {
	if blocks < 1 {
		blocks = 1
	}
	kv := &kvCache{blockSize: blockSize, total: blocks, refcnt: make([]int32, blocks),
		hash: make([]uint64, blocks), prev: make([]int32, blocks), next: make([]int32, blocks),
		inFree: make([]bool, blocks), head: -1, tail: -1, cached: map[uint64]int32{}, prefix: prefix}
	for i := 0; i < blocks; i++ {
		kv.pushFree(int32(i))
	}
	return kv
}

func (kv *kvCache) pushFree(b int32) {
	kv.prev[b], kv.next[b] = kv.tail, -1
	if kv.tail >= 0 {
		kv.next[kv.tail] = b
	} else {
		kv.head = b
	}
	kv.tail = b
	kv.inFree[b] = true
	kv.nfree++
}

func (kv *kvCache) removeFree(b int32) {
	p, n := kv.prev[b], kv.next[b]
	if p >= 0 {
		kv.next[p] = n
	} else {
		kv.head = n
	}
	if n >= 0 {
		kv.prev[n] = p
	} else {
		kv.tail = p
	}
	kv.inFree[b] = false
	kv.nfree--
}

// alloc takes the least recently freed block, evicting its cached hash.
func (kv *kvCache) alloc() int32 {
	b := kv.head
	if b < 0 {
		return -1
	}
	kv.removeFree(b)
	if h := kv.hash[b]; h != 0 {
		if kv.cached[h] == b {
			delete(kv.cached, h)
		}
		kv.hash[b] = 0
	}
	kv.refcnt[b] = 1
	return b
}

// release drops a reference; an unreferenced block joins the free queue with its hash.
func (kv *kvCache) release(b int32) {
	kv.refcnt[b]--
	if kv.refcnt[b] <= 0 {
		kv.refcnt[b] = 0
		kv.pushFree(b)
	}
}

// hit returns the cached block for a prefix hash and takes a reference to it.
func (kv *kvCache) hit(h uint64) (int32, bool) {
	if !kv.prefix {
		return -1, false
	}
	b, ok := kv.cached[h]
	if !ok {
		return -1, false
	}
	if kv.inFree[b] {
		kv.removeFree(b)
	}
	kv.refcnt[b]++
	return b, true
}

// commit records a full block's prefix hash so later requests can hit it.
func (kv *kvCache) commit(b int32, h uint64) {
	if !kv.prefix || h == 0 || kv.hash[b] != 0 {
		return
	}
	if _, dup := kv.cached[h]; dup {
		return
	}
	kv.hash[b] = h
	kv.cached[h] = b
}

// usage is vLLM's kv_cache_usage: 1 − free/total (cached-but-free blocks count as free).
func (kv *kvCache) usage() float64 { return 1 - float64(kv.nfree)/float64(kv.total) }
