#include "format.hpp"

#include "host_values.hpp"

#include <jit/error.hpp>
#include <jit/npy.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

namespace jit::cli {
namespace {

// ---- shortest round-trip digits

std::string chars(double v, std::chars_format f) {
    char buf[512];
    auto r = std::to_chars(buf, buf + sizeof buf, v, f);
    return std::string(buf, r.ptr);
}
std::string chars(float v, std::chars_format f) {
    char buf[512];
    auto r = std::to_chars(buf, buf + sizeof buf, v, f);
    return std::string(buf, r.ptr);
}

// For a 16-bit float value `v` (exactly representable), the double closest to the shortest
// decimal that reads back as the same 16-bit value; its own shortest form is those digits.
double shortest_small(double v, DType t) {
    auto round16 = [t](double x) { return t == DType::Float16 ? double_to_half(x) : double_to_bfloat16(x); };
    const std::uint16_t bits = round16(v);
    for (int p = 0; p < 17; ++p) {
        char buf[64];
        auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific, p);
        double back = 0;
        std::from_chars(buf, r.ptr, back);
        if (round16(back) == bits) return back;
    }
    return v;
}

std::string shortest(double v, DType t, std::chars_format f) {
    if (t == DType::Float32 || t == DType::Complex64) return chars(static_cast<float>(v), f);
    if (t == DType::Float16 || t == DType::BFloat16) return chars(shortest_small(v, t), f);
    return chars(v, f);
}

DType real_dtype(DType t) {
    if (t == DType::Complex64) return DType::Float32;
    if (t == DType::Complex128) return DType::Float64;
    return t;
}

std::string pad_left(const std::string& s, std::size_t w) {
    return s.size() >= w ? s : std::string(w - s.size(), ' ') + s;
}
std::string pad_right(const std::string& s, std::size_t w) {
    return s.size() >= w ? s : s + std::string(w - s.size(), ' ');
}

// Formats one column of floats (every shown value of an array) so that they align.
class FloatColumn {
public:
    FloatColumn(const std::vector<double>& values, DType t, bool force_sign) : t_(t), force_sign_(force_sign) {
        double max_abs = 0, min_abs = std::numeric_limits<double>::infinity();
        bool any = false;
        for (double v : values) {
            if (!std::isfinite(v) || v == 0) continue;
            any = true;
            max_abs = std::max(max_abs, std::fabs(v));
            min_abs = std::min(min_abs, std::fabs(v));
        }
        sci_ = any && (max_abs >= 1e8 || min_abs < 1e-4 || max_abs / min_abs > 1e3);
        for (double v : values) {
            if (!std::isfinite(v)) {
                nonfinite_w_ = std::max(nonfinite_w_, nonfinite(v).size());
                continue;
            }
            Parts p = split(v);
            int_w_ = std::max(int_w_, p.integer.size());
            frac_w_ = std::max(frac_w_, p.fraction.size());
            exp_w_ = std::max(exp_w_, p.exponent_digits.size());
        }
    }

    std::string operator()(double v) const {
        const std::size_t width = std::max(nonfinite_w_, int_w_ + 1 + frac_w_ + (sci_ ? 2 + exp_w_ : 0));
        if (!std::isfinite(v)) return pad_left(nonfinite(v), width);
        Parts p = split(v);
        std::string s = pad_left(p.integer, int_w_) + "." + p.fraction;
        if (sci_) {
            s += std::string(frac_w_ - p.fraction.size(), '0');
            s += "e";
            s += p.exponent_sign;
            s += std::string(exp_w_ - p.exponent_digits.size(), '0') + p.exponent_digits;
        } else {
            s += std::string(frac_w_ - p.fraction.size(), ' ');
        }
        return pad_left(s, width);
    }

private:
    struct Parts {
        std::string integer;   // with its sign
        std::string fraction;  // digits after the point (maybe none)
        char exponent_sign = '+';
        std::string exponent_digits;  // at least two
    };

    std::string nonfinite(double v) const {
        std::string s = std::isnan(v) ? "nan" : "inf";
        if (std::isinf(v) && v < 0) return "-" + s;
        return force_sign_ ? "+" + s : s;
    }

    Parts split(double v) const {
        std::string s = shortest(v, t_, sci_ ? std::chars_format::scientific : std::chars_format::fixed);
        Parts p;
        if (sci_) {
            auto e = s.find('e');
            std::string exp = s.substr(e + 1);
            s = s.substr(0, e);
            p.exponent_sign = exp[0];
            p.exponent_digits = exp.substr(1);
            if (p.exponent_digits.size() < 2) p.exponent_digits.insert(0, 2 - p.exponent_digits.size(), '0');
        }
        auto dot = s.find('.');
        p.integer = s.substr(0, dot);
        if (dot != std::string::npos) p.fraction = s.substr(dot + 1);
        if (force_sign_ && p.integer[0] != '-') p.integer.insert(p.integer.begin(), '+');
        return p;
    }

    DType t_;
    bool force_sign_;
    bool sci_ = false;
    std::size_t int_w_ = 0, frac_w_ = 0, exp_w_ = 2, nonfinite_w_ = 0;
};

// The formatted text of each shown element, in traversal order.
std::vector<std::string> format_elements(const std::vector<const unsigned char*>& elems, DType t) {
    std::vector<std::string> out;
    out.reserve(elems.size());
    if (is_bool(t)) {
        bool any_false = false;
        for (auto* e : elems) any_false |= *e == 0;
        for (auto* e : elems) out.push_back(pad_left(*e ? "True" : "False", any_false ? 5 : 4));
        return out;
    }
    if (is_temporal(t)) {
        // NumPy's: a date in ISO text, a duration its count, NaT, quoted but for counts;
        // right-aligned
        std::size_t w = 0;
        for (auto* e : elems) {
            std::int64_t v = 0;
            std::memcpy(&v, e, sizeof v);
            if (is_datetime(t)) out.push_back(fmt::format("'{}'", datetime_string(v, time_unit(t))));
            else out.push_back(v == kNaT ? std::string("'NaT'") : std::to_string(v));
            w = std::max(w, out.back().size());
        }
        for (auto& s : out) s = pad_left(s, w);
        return out;
    }
    if (is_integer(t)) {
        std::size_t w = 0;
        for (auto* e : elems) {
            Number n = load(e, t);
            out.push_back(t == DType::UInt64 ? std::to_string(static_cast<std::uint64_t>(n.i)) : std::to_string(n.i));
            w = std::max(w, out.back().size());
        }
        for (auto& s : out) s = pad_left(s, w);
        return out;
    }
    if (is_float(t)) {
        std::vector<double> v;
        for (auto* e : elems) v.push_back(load(e, t).f);
        FloatColumn col(v, t, false);
        for (double x : v) out.push_back(col(x));
        return out;
    }
    // complex: a column of real parts, a column of signed imaginary parts, then "j".
    std::vector<double> re, im;
    for (auto* e : elems) {
        auto c = load(e, t).c;
        re.push_back(c.real());
        im.push_back(c.imag());
    }
    FloatColumn rc(re, real_dtype(t), false), ic(im, real_dtype(t), true);
    std::size_t w = 0;
    for (std::size_t i = 0; i < re.size(); ++i) {
        std::string imag = ic(im[i]);
        imag.erase(std::remove(imag.begin(), imag.end(), ' '), imag.end());
        out.push_back(rc(re[i]) + imag + "j");
        w = std::max(w, out.back().size());
    }
    for (auto& s : out) s = pad_right(s, w);
    return out;
}

// A string element as Python's repr shows it, as NumPy prints string arrays: b'..' for bytes,
// '..' for str; the quote that needs no escape ('' unless the text holds a ' and no ");
// backslash, the quote, \t \n \r and the other control characters escaped.
std::string repr_string(const std::u32string& cps, bool bytes) {
    const bool has_single = cps.find(U'\'') != std::u32string::npos;
    const bool has_double = cps.find(U'"') != std::u32string::npos;
    const char q = has_single && !has_double ? '"' : '\'';
    std::string out = bytes ? "b" : "";
    out += q;
    for (char32_t c : cps) {
        if (c == U'\\') out += "\\\\";
        else if (c == static_cast<char32_t>(q)) out += std::string("\\") + q;
        else if (c == U'\t') out += "\\t";
        else if (c == U'\n') out += "\\n";
        else if (c == U'\r') out += "\\r";
        else if (c < 0x20 || c == 0x7f || (bytes && c >= 0x80) || (c >= 0x80 && c < 0xa0))
            out += fmt::format("\\x{:02x}", static_cast<unsigned>(c));
        else if (c >= 0xd800 && c < 0xe000) out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        else if (c < 0x80) out += static_cast<char>(c);
        else if (c < 0x800) {
            out += static_cast<char>(0xc0 | (c >> 6));
            out += static_cast<char>(0x80 | (c & 0x3f));
        } else if (c < 0x10000) {
            out += static_cast<char>(0xe0 | (c >> 12));
            out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (c & 0x3f));
        } else if (c < 0x110000) {
            out += static_cast<char>(0xf0 | (c >> 18));
            out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
            out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (c & 0x3f));
        } else {
            out += fmt::format("\\U{:08x}", static_cast<unsigned>(c));
        }
    }
    out += q;
    return out;
}

// The elements of an S or U array of `item` bytes each, without their trailing NULs (as NumPy
// reads them), as Python's reprs.
std::vector<std::string> format_strings(const std::vector<const unsigned char*>& elems, DType t, std::size_t item) {
    std::vector<std::string> out;
    for (const unsigned char* e : elems) {
        std::u32string cps;
        if (t == DType::Str) {
            for (std::size_t k = 0; k + 4 <= item; k += 4) {
                char32_t c;
                std::memcpy(&c, e + k, 4);
                cps += c;
            }
        } else {
            for (std::size_t k = 0; k < item; ++k) cps += static_cast<char32_t>(e[k]);
        }
        while (!cps.empty() && cps.back() == 0) cps.pop_back();
        out.push_back(repr_string(cps, t == DType::Bytes));
    }
    return out;
}

class Printer {
public:
    Printer(const unsigned char* data, DType t, const Shape& shape, const PrintOptions& o, bool summarise,
            std::size_t item)
        : data_(data), t_(t), item_(item), shape_(shape), o_(o), summarise_(summarise) {
        strides_ = contiguous_strides(shape);
    }

    std::string body(std::size_t prefix_len) {
        // Pass 1: the elements shown, in order; pass 2: their text; pass 3: the layout.
        std::vector<const unsigned char*> elems;
        collect(0, 0, elems);
        cells_ = is_string(t_) ? format_strings(elems, t_, item_) : format_elements(elems, t_);
        next_ = 0;
        return layout(0, 0, std::string(prefix_len, ' '), static_cast<std::size_t>(o_.line_width));
    }

private:
    bool summarised(std::size_t axis) const {
        return summarise_ && shape_[axis] > 2 * static_cast<std::int64_t>(o_.edge_items);
    }
    // Indices shown along `axis`, with -1 standing for the "..." gap.
    std::vector<std::int64_t> shown(std::size_t axis) const {
        std::vector<std::int64_t> idx;
        const std::int64_t n = shape_[axis];
        if (summarised(axis)) {
            for (std::int64_t i = 0; i < o_.edge_items; ++i) idx.push_back(i);
            idx.push_back(-1);
            for (std::int64_t i = n - o_.edge_items; i < n; ++i) idx.push_back(i);
        } else {
            for (std::int64_t i = 0; i < n; ++i) idx.push_back(i);
        }
        return idx;
    }

    void collect(std::size_t axis, std::int64_t offset, std::vector<const unsigned char*>& out) const {
        if (axis == shape_.size()) {
            out.push_back(data_ + static_cast<std::size_t>(offset) * item_);
            return;
        }
        for (std::int64_t i : shown(axis))
            if (i >= 0) collect(axis + 1, offset + i * strides_[axis], out);
    }

    static void extend_line(std::string& s, std::string& line, const std::string& word, std::size_t width,
                            const std::string& next_prefix) {
        bool wrap = line.size() + word.size() > width && line.size() > next_prefix.size();
        if (wrap) {
            while (!line.empty() && line.back() == ' ') line.pop_back();
            s += line + "\n";
            line = next_prefix;
        }
        line += word;
    }

    std::string layout(std::size_t axis, std::int64_t offset, const std::string& indent, std::size_t width) {
        if (axis == shape_.size()) return cells_[next_++];
        const std::string next_indent = indent + " ";
        const std::size_t next_width = width > 1 ? width - 1 : 1;
        const auto idx = shown(axis);
        std::string s;
        if (axis + 1 == shape_.size()) {
            const std::size_t elem_width = width > 1 ? width - 1 : 1;  // room for the ',' separator
            std::string line = indent;
            for (std::size_t k = 0; k < idx.size(); ++k) {
                std::string word =
                    idx[k] < 0 ? "..." : layout(axis + 1, offset + idx[k] * strides_[axis], next_indent, next_width);
                extend_line(s, line, word, k + 1 == idx.size() ? width : elem_width, indent);
                if (k + 1 != idx.size()) line += ", ";
            }
            s += line;
        } else {
            std::string sep(shape_.size() - axis, '\n');  // ",\n", ",\n\n", ...
            sep.front() = ',';
            for (std::size_t k = 0; k < idx.size(); ++k) {
                std::string nested =
                    idx[k] < 0 ? "..." : layout(axis + 1, offset + idx[k] * strides_[axis], next_indent, next_width);
                s += indent + nested;
                if (k + 1 != idx.size()) s += sep;
            }
        }
        std::string r = "[";
        r.append(s, indent.size());
        r += ']';
        return r;
    }

    const unsigned char* data_;
    DType t_;
    std::size_t item_;  // bytes per element (an S or U array's width)
    Shape shape_;
    Strides strides_;
    PrintOptions o_;
    bool summarise_;
    std::vector<std::string> cells_;
    std::size_t next_ = 0;
};

}  // namespace

std::string shape_text(const Shape& s) {
    std::string out = "(";
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (i) out += ", ";
        out += std::to_string(s[i]);
    }
    if (s.size() == 1) out += ",";
    return out + ")";
}

std::string format_array(const Array& a, const PrintOptions& options) {
    if (a.dtype() == DType::Utf8)
        throw ArgumentError(
            fmt::format("{} is an Arrow string column: the command line prints NumPy arrays", a.describe()));
    // NumPy quotes the names of datetime64 and timedelta64 dtypes (dtype='datetime64[s]'), and
    // shows strings by their NumPy dtype (dtype='|S3', dtype='<U5').
    const std::string dtype = is_string(a.dtype())     ? fmt::format("'{}'", npy_descr(a.dtype(), a.itemsize()))
                              : is_temporal(a.dtype()) ? fmt::format("'{}'", dtype_name(a.dtype()))
                                                       : std::string(dtype_name(a.dtype()));
    const std::string suffix = fmt::format(", dtype={})  # shape {}", dtype, shape_text(a.shape()));
    if (a.size() == 0) return "array([]" + suffix;
    std::unique_ptr<unsigned char[]> host(new unsigned char[a.nbytes()]);
    a.copy_to_host(host.get());
    const std::string prefix = "array(";
    const bool summarise = static_cast<std::size_t>(a.size()) > options.threshold;
    Printer p(host.get(), a.dtype(), a.shape(), options, summarise, a.itemsize());
    std::string out = prefix;
    out += p.body(prefix.size() + 1);  // rows align under the first '['
    out += suffix;
    return out;
}

std::string format_scalar_bytes(const void* element, DType t) {
    auto s = format_elements({static_cast<const unsigned char*>(element)}, t);
    std::string out = s[0];
    out.erase(std::remove(out.begin(), out.end(), ' '), out.end());
    return is_complex(t) ? "(" + out + ")" : out;
}

}  // namespace jit::cli
