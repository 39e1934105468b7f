// jitexpr — the ways of running a call, one file each, none re-entering the runtime:
//
//   direct.cpp    a prepared program over the arrays as they are (run::Way::Direct, and Cpu with
//                 the CPU backend's program);
//   copied.cpp    host arrays copied whole to the device, the program run there, the results
//                 copied back (Way::Copied; Way::TooLarge is its OutOfMemoryError);
//   streamed.cpp  host arrays through the GPU in chunks (Way::Streamed): the chunk programs
//                 run on the CUDA transport (backend/cuda/stream.hpp), which knows no program,
//                 and reductions' partials are combined by the CPU kernel table (cpu::combine);
//   sharded.cpp   row blocks on several devices at once (Way::Sharded): each shard's program on
//                 its device (Shards), the statements' values assembled as the decision says,
//                 reductions' partials combined by the same cpu::combine.
//
// The runtime (api/) decides (run::decide), keeps the caches and hands each way what it needs:
// the prepared program (an Entry), and for copied and streamed the Programs it may ask for the
// same text prepared over other arrays (device copies, chunk-shaped arrays).
#pragma once

#include "backend/backend.hpp"
#include "dsl/plan.hpp"
#include "run/decide.hpp"

#include <jit/core/arg.hpp>

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace jit::run {

// A program prepared for one binding signature: its plan, what the backend made of it (null for
// the plan of host data on a CUDA runtime, which decide() reads and nothing runs), and per
// output its dtype and shape, C-contiguous, without storage: a result shares these dimensions,
// so making it allocates only its storage.
struct Entry {
    ir::Plan plan;
    std::shared_ptr<detail::Prepared> prepared;
    std::vector<Array> output_shapes;
    Backend backend = Backend::Cpu;  // where it runs (and its outputs are made)
};
// `plan` prepared by `backend` (what it took is in prepared->info()).
std::shared_ptr<Entry> prepare(ir::Plan plan, detail::BackendImpl& backend, const detail::PrepareOptions& options);
// `plan` over host arrays, not prepared: what decide() and the streamed run read of it.
std::shared_ptr<Entry> host_plan(ir::Plan plan);

// The same text prepared over other arrays, from the runtime's caches.
class Programs {
public:
    virtual ~Programs() = default;
    // The program over `env` (every name the text uses bound as there). `timed`: the call's
    // Timing records the preparation (cache hit, check, emit, compile, load).
    virtual std::shared_ptr<const Entry> entry(const Environment& env, bool timed) = 0;
};

// One call's run-time arguments.
struct Call {
    void* stream = nullptr;                  // CUDA: the CUstream (null: the default stream)
    detail::CallControl* control = nullptr;  // stop requests and progress (null: none)
    bool all_or_nothing = false;             // in-place targets through temporaries
    bool write_back = true;                  // assigned names bound into the environment
    double* run_ms = nullptr;                // receives the run's time (the call is then timed)
};

// The array an input slot reads: the bound array, or the view of it that the text takes
// (a[1:]), made from its memory without a copy.
Array bound_input(const ir::InputDecl& d, const Array& a);

// Outputs of dates and durations, computed as int64 counts, labelled with their dtypes.
void label_outputs(const ir::Program& p, std::span<Array> outputs);

// The values `env` binds to `p`'s scalars, checked by the language's rules (dsl/scalars.hpp).
void bind_scalars(const ir::Program& p, const Environment& env, std::span<ir::Value> scalars);

// Runs `e` over the arrays and scalars `env` binds to its program's names, which are all on
// the backend it was prepared for; assigns its outputs into `env` (Call::write_back) and
// returns the value of its last statement (undefined when that is an assignment).
Array direct(const Entry& e, Environment& env, const Call& call);

// What a call binds to a program's slots, found by the caller: inputs[i] the array of
// Program::inputs[i], scalars[s] the value of Program::scalars[s] (a repeated call knows where
// they are without looking names up).
struct Slots {
    std::span<const Arg* const> inputs;
    std::span<const Arg* const> scalars;
};
// direct() over `slots`; the outputs are assigned into `env` when it is given and
// Call::write_back.
Array direct(const Entry& e, const Slots& slots, const Call& call, Environment* env);

// Way::Copied (and Way::TooLarge, an OutOfMemoryError): every host array bound to `names` (the
// names the text reads and assigns) copied to CUDA device `device`, the program prepared over
// the copies (`programs`) run there, the arrays assigned to `targets` copied back into the
// caller's arrays (in place when dtype and shape match) or bound. A stop request is honoured
// between the pieces of the copies and between kernels; the caller's arrays are then untouched.
Array copied(const Decision& d, Programs& programs, std::span<const std::string> names,
             std::span<const std::string> targets, int device, Environment& env, const Call& call);

// The variables of a chunk of `rows` rows: `env`'s scalars, and each input of `p` bound to a
// device array shaped as the chunk program reads it (a prototype, without storage).
Environment chunk_environment(const ir::Program& p, const chunks::ChunkPlan& cp, std::int64_t rows,
                              const Environment& env);

// Way::Streamed: `host` (the plan over the host arrays and its host prototypes) in the chunks of
// `d`, each chunk a program prepared over chunk-shaped device arrays (`programs`). nullopt when
// the chunks make another program than the whole (then not_streamed() says what runs instead).
std::optional<Array> streamed(const Decision& d, const Entry& host, Programs& programs, Environment& env,
                              const Call& call);

// The program on one shard, on that shard's device (the API layer's runtime of the device).
class Shards {
public:
    virtual ~Shards() = default;
    // Runs the program over `env` (shard `shard`'s arrays and the shared scalars), assigning its
    // names into `env`; returns the value of its last statement.
    virtual Array run(std::size_t shard, Environment& env) = 0;
};

// A statement's value over the shards, as the decision says it is given.
struct ShardValue {
    std::string name;  // empty: the last statement's bare value
    shards::StatementPlan::Out out = shards::StatementPlan::Out::Split;
    std::vector<Array> parts;  // Split, Replicated: one per shard; Whole: the combined value alone
};

// Way::Sharded: the program on every shard at once (`envs`, one environment per shard of
// d.sharding's layout, each shard on its own thread, the calling thread taking the last), then
// every statement's value assembled by d.sharding: the shards' parts as they are, or (Whole)
// their partials combined on the host through cpu::combine, a mean weighing each by its rows.
// The first error of any shard is rethrown once every shard has finished.
std::vector<ShardValue> sharded(const Decision& d, Shards& shards, std::span<Environment> envs);

}  // namespace jit::run
