// jitexpr — the cache of compiled modules: key -> bytes (CUBIN/PTX images), in memory and on disk.
//
// The cache knows nothing of what a key means beyond its bytes. Callers build keys with
// KeyBuilder (every field that changes the compiled binary goes in), keep ready objects in a
// MemoryCache (LRU by entry count, single-flight creation) and images in a DiskCache (one
// checksummed file per key, written atomically, LRU by bytes, safe for many processes).
// Everything here is thread-safe. See docs/cache.md.
#pragma once

#include <jit/error.hpp>

#include <array>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace jit::cache {

// ---------------------------------------------------------------------------------------------
// Digest: SHA-256 (FIPS 180-4), written here so the library needs nothing beyond libc.

class Sha256 {
public:
    Sha256();
    Sha256& update(std::string_view bytes);
    Sha256& update(const void* data, std::size_t size);
    // The 32-byte digest of everything given so far. The object stays usable (finish works on a copy).
    std::array<std::uint8_t, 32> finish() const;

private:
    void block(const std::uint8_t* p);
    std::array<std::uint32_t, 8> h_;
    std::array<std::uint8_t, 64> buf_;
    std::size_t buffered_ = 0;
    std::uint64_t total_ = 0;  // bytes
};

// Lowercase hex of `bytes`.
std::string to_hex(const std::uint8_t* bytes, std::size_t size);
// SHA-256 of `bytes` as 64 lowercase hex characters.
std::string digest(std::string_view bytes);
// A 64-bit hash of `bytes` from `seed`, for keys that name what a process compiled (not a
// checksum): XXH3-64 where built with xxhash.h (about 1 us for a 15 KB kernel source), else
// FNV-1a (about 20). Builds with and without xxhash.h differ in it, as they differ in their
// entries' checksums, so their disk caches do not share entries.
std::uint64_t hash64(std::string_view bytes, std::uint64_t seed);

// Builds a key from named fields in a canonical, length-prefixed encoding: a domain tag, then per
// field (u64 name length, name, u64 value length, value), little-endian. So changing any field's
// value, name or order changes the key, and no two field lists encode to the same bytes (no
// collision by moving bytes across a field boundary). Names must be non-empty and distinct
// (InternalError otherwise: it is a bug in the caller).
class KeyBuilder {
public:
    KeyBuilder();
    KeyBuilder& add(std::string_view name, std::string_view value);
    // Integers are added as their decimal text (add("nvrtc", 13000) == add("nvrtc", "13000")),
    // bools as "1" / "0".
    template <std::integral T>
    KeyBuilder& add(std::string_view name, T value) {
        if constexpr (std::is_same_v<T, bool>) return add(name, std::string_view(value ? "1" : "0"));
        else return add(name, std::string_view(std::to_string(value)));
    }
    // The key: 64 lowercase hex characters (valid as a DiskCache key).
    std::string key() const;
    std::size_t fields() const { return names_.size(); }

private:
    Sha256 sha_;
    std::vector<std::string> names_;
};

// ---------------------------------------------------------------------------------------------
// MemoryCache<K, V>: LRU bounded by entry count, with single-flight creation.
//
// get_or_create(key, factory): on a hit returns the value; on a miss exactly one caller runs
// factory() (outside the lock) while others asking for the same key wait for it and get the same
// value, or the same exception (exceptions are not cached: the next call tries again). Different
// keys are created in parallel. A hit takes the lock, finds by (heterogeneous) lookup, moves the
// entry to the front and copies V: it allocates nothing when copying V does not (use a
// shared_ptr for anything large). A factory must not ask the same cache for its own key
// (InternalError instead of a deadlock).
//
// fetch(key, factory) is the same for hot paths, without the lock, and with the failures of a
// creation kept to its caller: a caller that waited for another's creation which failed creates
// for itself (so a stopped or failing call fails alone). Each thread keeps a table of
// the entries it fetched, valid until the cache next drops an entry (evicts, erases, replaces or
// clears), so a repeated fetch is a lookup in that table with no lock and no atomic
// read-modify-write. It returns a reference valid until the thread's next call into this cache.
// Recency of such hits reaches the LRU as a tick the hit stores into the entry (an entry at the
// back that was used since it was last moved gets a second chance). A thread's table keeps the
// entries it holds alive until its next call, its exit, or the cache's destruction.

// Hash that also accepts std::string_view / const char* for string keys (no temporary string).
template <class K>
struct CacheHash : std::hash<K> {};
template <>
struct CacheHash<std::string> {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

struct MemoryStats {
    std::uint64_t hits = 0;                // found ready (fetch included)
    std::uint64_t misses = 0;              // ran the factory (or, for get(), found nothing)
    std::uint64_t coalesced = 0;           // waited for another caller's factory for the same key
    std::uint64_t coalesced_failures = 0;  // of those, waits that got the factory's exception
    std::uint64_t evictions = 0;           // dropped because over capacity
    std::uint64_t failures = 0;            // factory threw
    std::size_t entries = 0;
    std::size_t capacity = 0;
};

template <class K, class V, class Hash = CacheHash<K>, class Eq = std::equal_to<>>
class MemoryCache {
public:
    // capacity: most entries kept; 0 keeps none (creation is still single-flight).
    explicit MemoryCache(std::size_t capacity = 4096) : capacity_(capacity) {}
    MemoryCache(const MemoryCache&) = delete;
    MemoryCache& operator=(const MemoryCache&) = delete;
    ~MemoryCache() {
        // No call is in flight (a cache must not be destroyed under its users): the threads'
        // tables let go of the values now, not when their threads next run or end.
        std::vector<std::shared_ptr<Local>> live;
        {
            std::lock_guard lock(shared_->mutex);
            for (auto& w : shared_->locals)
                if (auto l = w.lock()) live.push_back(std::move(l));
            shared_->locals.clear();
        }
        for (auto& l : live) {
            l->map.clear();
            l->last.reset();
            l->dead.store(true, std::memory_order_relaxed);
        }
    }

    template <class Q>
    std::optional<V> get(const Q& key) {
        std::lock_guard lock(mutex_);
        auto it = index_.find(key);
        if (it == index_.end()) {
            ++stats_.misses;
            return std::nullopt;
        }
        ++stats_.hits;
        touch_locked(it->second);
        return it->second->second->value;
    }

    template <class Q, class F>
    V get_or_create(const Q& key, F&& factory) {
        return node_or_create(key, std::forward<F>(factory), nullptr)->value;
    }

private:
    struct Node;

public:
    // What fetch() found, kept by a caller that can tell a repeated request without its key:
    // again() returns the value while nothing has left the cache since (weak: it keeps nothing
    // alive, and outlives the cache harmlessly).
    class Handle {
    public:
        Handle() = default;

    private:
        friend class MemoryCache;
        std::weak_ptr<Node> node;
        std::uint64_t generation = 0;
        const void* cache = nullptr;
    };

    // See above. `created` (optional) is set to whether this call ran the factory; `handle`
    // (optional) to what again() finds again.
    template <class Q, class F>
    const V& fetch(const Q& key, F&& factory, bool* created = nullptr, Handle* handle = nullptr) {
        Local& l = local();
        const std::uint64_t g = generation_.load(std::memory_order_acquire);
        if (l.generation == g) {
            if (auto it = l.map.find(key); it != l.map.end()) {
                hit(l, *it->second);
                if (created) *created = false;
                if (handle) *handle = handle_of(it->second, g);
                return it->second->value;
            }
        } else {
            l.map.clear();  // entries left the cache since: start over
            l.generation = g;
        }
        l.last.reset();
        NodePtr node = node_or_create(key, std::forward<F>(factory), created, /*retry=*/true);
        if (handle) *handle = handle_of(node, g);
        if (keeps_entries()) {
            // `g` was read before the lookup: if an entry left the cache since, the next call
            // finds the generation changed and starts over.
            auto it = l.map.try_emplace(K(key), std::move(node)).first;
            return it->second->value;
        }
        l.last = std::move(node);        // capacity 0: held for the caller until its next call
        if (handle) *handle = Handle{};  // never kept: nothing to find again
        return l.last->value;
    }

    // The value `h` was fetched with, if no entry has left this cache since (any eviction,
    // erasure, replacement or clearing forgets every handle): a hit, counted and aged as
    // fetch()'s are, held by the pointer returned. Null otherwise: fetch() again.
    std::shared_ptr<const V> again(const Handle& h) {
        if (h.cache != this || h.generation != generation_.load(std::memory_order_acquire)) return nullptr;
        NodePtr n = h.node.lock();
        if (!n) return nullptr;
        hit(local(), *n);
        const V* v = &n->value;
        return std::shared_ptr<const V>(std::move(n), v);
    }

    // Whether a ready entry is held, without counting a hit or a miss or touching its age (explain).
    template <class Q>
    bool contains(const Q& key) const {
        std::lock_guard lock(mutex_);
        return index_.find(key) != index_.end();
    }

    // Inserts or replaces.
    void put(const K& key, V value) {
        std::lock_guard lock(mutex_);
        insert_locked(key, std::make_shared<Node>(std::move(value)));
    }

    template <class Q>
    bool erase(const Q& key) {
        std::lock_guard lock(mutex_);
        auto it = index_.find(key);
        if (it == index_.end()) return false;
        lru_.erase(it->second);
        index_.erase(it);
        generation_.fetch_add(1, std::memory_order_release);
        return true;
    }

    // Drops every ready entry (creations in flight finish and are kept). Counters stay.
    void clear() {
        std::lock_guard lock(mutex_);
        index_.clear();
        lru_.clear();
        generation_.fetch_add(1, std::memory_order_release);
    }

    void set_capacity(std::size_t capacity) {
        std::lock_guard lock(mutex_);
        capacity_ = capacity;
        trim_locked();
    }

    MemoryStats stats() const {
        std::lock_guard lock(mutex_);
        MemoryStats s = stats_;
        s.hits += local_hits();
        s.entries = index_.size();
        s.capacity = capacity_;
        return s;
    }

    std::size_t size() const {
        std::lock_guard lock(mutex_);
        return index_.size();
    }

    // Keys from most to least recently moved to the front.
    std::vector<K> keys() const {
        std::lock_guard lock(mutex_);
        std::vector<K> out;
        out.reserve(lru_.size());
        for (const auto& kv : lru_) out.push_back(kv.first);
        return out;
    }

private:
    struct Node {
        explicit Node(V v) : value(std::move(v)) {}
        V value;
        std::atomic<std::uint64_t> used{0};  // tick of the latest fetch that hit a thread's table
        std::uint64_t listed = 0;            // tick when last moved to the front (under mutex_)
    };
    using NodePtr = std::shared_ptr<Node>;
    using List = std::list<std::pair<K, NodePtr>>;

    Handle handle_of(const NodePtr& n, std::uint64_t generation) const {
        Handle h;
        h.node = n;
        h.generation = generation;
        h.cache = this;
        return h;
    }
    struct Flight {
        std::shared_future<NodePtr> result;
        std::thread::id owner;
    };
    struct Local;
    // What the cache and the threads' tables share (outlives both).
    struct Shared {
        std::mutex mutex;
        std::vector<std::weak_ptr<Local>> locals;
        std::uint64_t retired_hits = 0;  // of tables whose threads have ended
    };
    // One thread's table for this cache.
    struct Local {
        std::shared_ptr<Shared> shared;
        std::uint64_t generation = ~std::uint64_t{0};
        std::unordered_map<K, NodePtr, Hash, Eq> map;
        NodePtr last;                        // capacity 0: the value fetch returned last
        std::atomic<std::uint64_t> hits{0};  // written by its thread only
        std::atomic<bool> dead{false};       // the cache is gone
        ~Local() {
            std::lock_guard lock(shared->mutex);
            shared->retired_hits += hits.load(std::memory_order_relaxed);
        }
    };

    Local& local() {
        thread_local std::vector<std::pair<std::uint64_t, std::shared_ptr<Local>>> tables;
        for (auto& [id, l] : tables)
            if (id == id_) return *l;
        std::erase_if(tables, [](const auto& t) { return t.second->dead.load(std::memory_order_relaxed); });
        auto l = std::make_shared<Local>();
        l->shared = shared_;
        {
            std::lock_guard lock(shared_->mutex);
            std::erase_if(shared_->locals, [](const std::weak_ptr<Local>& w) { return w.expired(); });
            shared_->locals.push_back(l);
        }
        tables.emplace_back(id_, std::move(l));
        return *tables.back().second;
    }

    // A hit on `n` through thread table `l`: counted, and its age refreshed.
    void hit(Local& l, Node& n) {
        const std::uint64_t t = tick_.load(std::memory_order_relaxed);
        if (n.used.load(std::memory_order_relaxed) != t) n.used.store(t, std::memory_order_relaxed);
        l.hits.store(l.hits.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }

    std::uint64_t local_hits() const {
        std::vector<std::shared_ptr<Local>> live;  // released after the lock: a last reference
        std::uint64_t n = 0;                       // runs ~Local, which takes it
        {
            std::lock_guard lock(shared_->mutex);
            n = shared_->retired_hits;
            for (auto& w : shared_->locals)
                if (auto l = w.lock()) live.push_back(std::move(l));
        }
        for (auto& l : live) n += l->hits.load(std::memory_order_relaxed);
        return n;
    }

    bool keeps_entries() const {
        std::lock_guard lock(mutex_);
        return capacity_ > 0;
    }

    // `retry`: a caller that waited for another's creation which failed creates for itself
    // (fetch), instead of getting the other's exception (get_or_create).
    template <class Q, class F>
    NodePtr node_or_create(const Q& key, F&& factory, bool* created, bool retry = false) {
        if (created) *created = false;
        std::unique_lock lock(mutex_);
        for (;;) {
            if (auto it = index_.find(key); it != index_.end()) {
                ++stats_.hits;
                touch_locked(it->second);
                return it->second->second;
            }
            auto it = flights_.find(key);
            if (it == flights_.end()) break;
            if (it->second.owner == std::this_thread::get_id())
                throw InternalError("MemoryCache: a factory asked the cache for the key it is creating");
            ++stats_.coalesced;
            std::shared_future<NodePtr> result = it->second.result;
            lock.unlock();
            try {
                return result.get();  // the value, or rethrows the factory's exception
            } catch (...) {
                lock.lock();
                ++stats_.coalesced_failures;
                if (!retry) throw;
            }
        }
        ++stats_.misses;
        if (created) *created = true;
        std::promise<NodePtr> promise;
        K owned_key(key);
        auto [flight, inserted] =
            flights_.emplace(owned_key, Flight{promise.get_future().share(), std::this_thread::get_id()});
        (void)inserted;
        std::shared_future<NodePtr> result = flight->second.result;
        lock.unlock();

        try {
            NodePtr node = std::make_shared<Node>(std::forward<F>(factory)());
            lock.lock();
            insert_locked(owned_key, node);
            flights_.erase(owned_key);
            lock.unlock();
            promise.set_value(std::move(node));
        } catch (...) {
            if (!lock.owns_lock()) lock.lock();
            ++stats_.failures;
            flights_.erase(owned_key);
            lock.unlock();
            promise.set_exception(std::current_exception());
        }
        return result.get();
    }

    void touch_locked(typename List::iterator it) {
        lru_.splice(lru_.begin(), lru_, it);
        it->second->listed = tick_.load(std::memory_order_relaxed);
    }

    void insert_locked(const K& key, NodePtr node) {
        const std::uint64_t t = tick_.load(std::memory_order_relaxed) + 1;
        tick_.store(t, std::memory_order_relaxed);
        node->listed = t;
        node->used.store(t, std::memory_order_relaxed);
        if (auto it = index_.find(key); it != index_.end()) {
            it->second->second = std::move(node);
            lru_.splice(lru_.begin(), lru_, it->second);
            generation_.fetch_add(1, std::memory_order_release);  // the old value left
            return;
        }
        if (capacity_ == 0) return;
        lru_.emplace_front(key, std::move(node));
        index_.emplace(key, lru_.begin());
        trim_locked();
    }

    void trim_locked() {
        bool dropped = false;
        std::size_t chances = lru_.size();  // at most one second chance per entry and trim
        while (lru_.size() > capacity_) {
            auto last = std::prev(lru_.end());
            Node& n = *last->second;
            if (chances > 0 && n.used.load(std::memory_order_relaxed) > n.listed) {
                --chances;  // fetched since it was last moved: move it to the front instead
                touch_locked(last);
                continue;
            }
            index_.erase(last->first);
            lru_.erase(last);
            ++stats_.evictions;
            dropped = true;
        }
        if (dropped) generation_.fetch_add(1, std::memory_order_release);
    }

    inline static std::atomic<std::uint64_t> next_id_{0};
    const std::uint64_t id_ = next_id_.fetch_add(1, std::memory_order_relaxed) + 1;
    std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
    std::atomic<std::uint64_t> generation_{0};  // entries that left the cache so far
    std::atomic<std::uint64_t> tick_{0};        // insertions so far: the clock of Node::used
    mutable std::mutex mutex_;
    std::size_t capacity_;
    List lru_;  // front: most recent
    std::unordered_map<K, typename List::iterator, Hash, Eq> index_;
    std::unordered_map<K, Flight, Hash, Eq> flights_;
    MemoryStats stats_;
};

// ---------------------------------------------------------------------------------------------
// DiskCache: one file per key under <dir>/v3/<first 2 key chars>/<key>.bin (format version 3,
// docs/cache.md). Never follows a symbolic link inside <dir>, opens only regular files, never
// blocks on a file, and removes or replaces only files it can prove it wrote.

// Called with one sentence when the disk cache degrades (directory unusable, disk full).
using WarningHandler = std::function<void(const std::string&)>;

struct DiskCacheOptions {
    // The directory. Empty: $JITEXPR_CACHE_DIR, else $XDG_CACHE_HOME/jitexpr, else
    // $HOME/.cache/jitexpr (when use_environment; else empty means disabled).
    std::string dir;
    bool enabled = true;          // false: every get misses and put stores nothing
    bool use_environment = true;  // read JITEXPR_CACHE_DIR, XDG_CACHE_HOME, HOME, JITEXPR_DISK_CACHE
    std::uint64_t max_bytes = std::uint64_t(1) << 30;  // bound on the files' total size
    // When over max_bytes, evict least recently used files down to max_bytes * evict_to (0..1].
    double evict_to = 0.9;
    bool fsync = true;  // fsync file and directory on put (durable against power loss)
    // The checksum algorithm of the entries this cache writes (docs/cache.md): 0 the build's
    // default (2, XXH3-128, when built with xxhash.h; else 1, SHA-256), 1 or 2 to choose (tests
    // and benchmarks). Entries of either algorithm this build computes are read.
    std::uint8_t checksum = 0;
    // Receives each warning (at most one per kind per DiskCache). Unset: stderr, at most one per
    // kind per process.
    WarningHandler on_warning;
};

struct DiskStats {
    std::uint64_t hits = 0;             // this object's gets that returned bytes
    std::uint64_t misses = 0;           // this object's gets that did not
    std::uint64_t corrupt_removed = 0;  // bad files found (and removed) by get or verify
    std::uint64_t writes = 0;           // puts that stored a file
    std::uint64_t write_failures = 0;   // puts dropped (disk full, I/O error)
    std::uint64_t evictions = 0;        // files this object evicted
    std::uint64_t entries = 0;          // files in the directory now (all processes)
    std::uint64_t bytes = 0;            // their total size
};

struct DiskEntry {
    std::string key;
    std::uint64_t bytes = 0;       // file size (header + key + payload)
    std::int64_t last_use_ns = 0;  // mtime: last put or hit, ns since the epoch
};

struct VerifyReport {
    std::uint64_t checked = 0;
    std::uint64_t valid = 0;
    std::uint64_t removed = 0;          // damaged entries of jitexpr's and stale temporary files removed
    std::vector<std::string> problems;  // one line per removed file: path and why
    std::vector<std::string> left;      // one line per file that is not jitexpr's (or not
                                        // readable by this build), left in place: path and why
    std::vector<std::string> failed;    // damaged entries of jitexpr's that could not be removed
    bool ok() const { return removed == 0 && left.empty() && failed.empty(); }
};

struct ClearReport {
    std::uint64_t removed = 0;             // entries removed
    std::uint64_t temporaries = 0;         // stale temporary files removed
    std::uint64_t old_format_removed = 0;  // files of the previous formats (v1, v2) removed
    std::vector<std::string> left;         // files that are not jitexpr's, left in place: path and why
    std::vector<std::string> failed;       // entries of jitexpr's that could not be removed: path and why
};

class DiskCache {
public:
    explicit DiskCache(DiskCacheOptions options = {});
    ~DiskCache();
    DiskCache(const DiskCache&) = delete;
    DiskCache& operator=(const DiskCache&) = delete;

    // Where options point (JITEXPR_DISK_CACHE=0 or enabled=false: empty).
    static std::string resolve_directory(const DiskCacheOptions& options);
    // A key the disk cache accepts: 8..128 characters of [0-9a-f] (what KeyBuilder and digest make).
    static bool valid_key(std::string_view key);
    // The checksum algorithm new entries get by default: 2 (XXH3-128) or 1 (SHA-256).
    static std::uint8_t default_checksum();
    // The checksum of algorithm `algorithm` over `covered` (an entry's bytes 0..31, key and
    // payload), its own length (32 or 16 bytes, not padded); empty for an algorithm this build
    // does not compute.
    static std::string checksum(std::uint8_t algorithm, std::string_view covered);

    bool enabled() const;
    // The root in use (<dir>), empty when disabled.
    std::string directory() const;
    // Why the disk cache is off, empty when it is on.
    std::string disabled_reason() const;

    // The payload, or nullopt on a miss. A file of jitexpr's that fails a check (length,
    // checksum) and an empty file are removed and counted as corrupt; anything else (a foreign
    // file, a symbolic link, a FIFO, a directory) is a miss and left alone. Never blocks, never
    // throws for file problems. Throws ArgumentError for a key that is not valid_key().
    std::optional<std::string> get(std::string_view key);
    // Stores atomically (temp file, write, fsync, rename, fsync dir). False when not stored
    // (disabled, disk full, a foreign file in the entry's place: warns once per kind); *why_not,
    // when given, gets the reason. Throws ArgumentError for an invalid key.
    bool put(std::string_view key, std::string_view bytes);
    bool put(std::string_view key, std::string_view bytes, std::string* why_not);
    // Removes the entry when it is jitexpr's.
    bool erase(std::string_view key);

    DiskStats stats() const;
    // Removes every entry of jitexpr's (and stale temporary files) of this format version, and
    // the previous formats' (v1, v2) files that prove to be jitexpr's; leaves everything else.
    ClearReport clear();
    // Checks every file fully; removes damaged entries of jitexpr's and stale temporary files,
    // and reports (without touching them) files that are not jitexpr's.
    VerifyReport verify();
    std::vector<DiskEntry> entries() const;
    // Evicts now if over the bound (put does this itself).
    void evict();

    // The path a key's file has (for tests and tools).
    std::string path_for(std::string_view key) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------------------------
// ImageCache: memory in front of disk for byte images. get_or_create looks in memory, then on
// disk, then runs the factory (single-flight per key) and writes its bytes to disk.

struct ImageCacheStats {
    MemoryStats memory;
    DiskStats disk;
    std::uint64_t created = 0;  // factory runs that returned
};

class ImageCache {
public:
    using Image = std::shared_ptr<const std::string>;
    ImageCache(std::size_t memory_entries, DiskCacheOptions disk);

    // `from_disk`, when given, is set to whether the bytes came from the disk cache.
    Image get_or_create(const std::string& key, const std::function<std::string()>& factory, bool* from_disk = nullptr);
    ImageCacheStats stats() const;
    void clear_memory() { memory_.clear(); }
    DiskCache& disk() { return disk_; }
    MemoryCache<std::string, Image>& memory() { return memory_; }

private:
    MemoryCache<std::string, Image> memory_;
    DiskCache disk_;
    std::atomic<std::uint64_t> created_{0};
};

}  // namespace jit::cache
