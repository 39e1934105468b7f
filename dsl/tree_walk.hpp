// jitexpr — walks over an expression tree with a list of their own, so that the depth of the
// tree never reaches the stack: for syntax::Expr and for the public jit::parsed::Expr
// (include/jit/language.hpp), which have the same shape (children in `operands`, keyword values
// in `keywords[i].value`, each a unique_ptr).
#pragma once

#include <utility>
#include <vector>

namespace jit::tree {

// Whether `pred` holds for any node of the tree under `root` (`root` included).
template <class E, class Pred>
bool any_node(const E& root, Pred pred) {
    std::vector<const E*> todo{&root};
    while (!todo.empty()) {
        const E* e = todo.back();
        todo.pop_back();
        if (pred(*e)) return true;
        for (const auto& o : e->operands)
            if (o) todo.push_back(o.get());
        for (const auto& k : e->keywords)
            if (k.value) todo.push_back(k.value.get());
    }
    return false;
}

// For a node's destructor: its children that have children of their own move to a list of
// pending subtrees, each taken apart in turn, so that destroying the tree never recurses. Should
// the list not grow (out of memory), a child stays put and is destroyed the ordinary, recursive
// way.
template <class E>
void take_apart(E& root) noexcept {
    if (root.operands.empty() && root.keywords.empty()) return;
    using Ptr = typename decltype(root.operands)::value_type;
    std::vector<Ptr> pending;
    auto take = [&pending](E& e) noexcept {
        try {
            for (Ptr& o : e.operands)
                if (o && (!o->operands.empty() || !o->keywords.empty())) pending.push_back(std::move(o));
            for (auto& k : e.keywords)
                if (k.value && (!k.value->operands.empty() || !k.value->keywords.empty()))
                    pending.push_back(std::move(k.value));
        } catch (...) {}
    };
    take(root);
    while (!pending.empty()) {
        Ptr e = std::move(pending.back());
        pending.pop_back();
        take(*e);
    }
}

}  // namespace jit::tree
