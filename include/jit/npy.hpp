// jitexpr — reading and writing NumPy .npy files.
//
// Reads format versions 1.0, 2.0 and 3.0; writes 1.0 (2.0 if the header would not fit, which
// cannot happen with at most 8 dimensions). Every jitexpr dtype is supported:
//
//   bool '|b1'   int8..int64 '|i1' '<i2' '<i4' '<i8'   uint8..uint64 '|u1' '<u2' '<u4' '<u8'
//   float16 '<f2'   float32 '<f4'   float64 '<f8'   complex64 '<c8'   complex128 '<c16'
//   bfloat16 'bfloat16'  (the name ml_dtypes registers with NumPy; little-endian 16-bit patterns.
//                         NumPy reads it when ml_dtypes is imported.)
//   datetime64 '<M8[unit]'   timedelta64 '<m8[unit]'   every unit, Y to as (not generic '<M8',
//                         nor a multiple of a unit, '<M8[5s]')
//
// Loading accepts either byte order ('>' is swapped, '=' means this machine's), '|' or any order
// for one-byte types, C or Fortran order (Fortran data is converted to C order), 0 to 8
// dimensions. Anything else (structured dtypes, strings, objects, long double), a
// malformed header, a shape whose size overflows, or a file shorter than its data is a
// jit::IOError that names the file and says what is wrong. Bytes after the data are ignored
// (as NumPy does).
//
// Paths (docs/cli.md, ".npy files"): a regular file is read, or replaced atomically by a save
// (C order, little-endian, written to a temporary file ".jitexpr-<pid>-<16 hex>.tmp" in the
// target's folder, fsynced, given the old file's mode, renamed over it: a failure never leaves a
// partial file, and a save makes a new inode); a symbolic link is followed to its final target;
// a pipe, FIFO or character device is read or written in order, never replaced; a directory,
// block device or socket is an IOError. A regular file's size is checked against its header
// before anything is allocated. Writes hold SIGXFSZ and SIGPIPE back in the calling thread, so
// a file size limit or a closed pipe is an IOError; signal dispositions are never changed.
#pragma once

#include <jit/array.hpp>
#include <jit/runtime.hpp>

#include <string>
#include <string_view>

namespace jit {

// Loads a .npy file into a new C-contiguous array on `backend` (Auto: the default runtime's).
Array load_npy(const std::string& path, Backend backend = Backend::Auto);

// Saves `a` (any backend, any strides) as a .npy file, atomically.
void save_npy(const std::string& path, const Array& a);

// The same with a cancel token and progress (CallOptions::cancel and ::progress; the stream and
// timing are not used): the file is read or written in chunks, a stop between two throws
// CancelledError (a save then leaves no temporary file and `path` as it was), and progress
// counts the data's bytes (Progress::Phase::Load / Save).
Array load_npy(const std::string& path, Backend backend, const CallOptions& options);
void save_npy(const std::string& path, const Array& a, const CallOptions& options);

// In-memory variants: the bytes of a whole .npy file. `name` is used in error messages.
Array parse_npy(std::string_view bytes, Backend backend = Backend::Auto, std::string_view name = "<memory>");
std::string to_npy_bytes(const Array& a);

// The descr string written for `t` ("<f4", "|b1", "bfloat16").
std::string npy_descr(DType t);
// The same for an array of `itemsize` bytes per element: "|S5" and "<U3" for NumPy's
// fixed-width strings, npy_descr(t) for the others.
std::string npy_descr(DType t, std::size_t itemsize);

}  // namespace jit
