"""Alias bombs in YAML: aliases let a few lines stand for a huge document (a "billion laughs": anchors of lists of
aliases of anchors...). PyYAML builds it cheaply, with shared references, but whatever walks what it built
(validation, JSON, torch-spyre's runtime on the worker) walks every repeat. So the node tree is measured before
anything is built of it, in one walk: refused where its aliases repeat more than MAX_ALIAS_REPEATS values, or where
an alias sits inside the value it names (an endless document)."""

from __future__ import annotations

import yaml

# Values aliases may repeat in one document, all together: far above what sharing a command or an env takes, far
# below a bomb's billions; a document without aliases repeats nothing, however large.
MAX_ALIAS_REPEATS = 100_000


class AliasesRefused(yaml.MarkedYAMLError):
    """A document whose aliases would make it huge or endless, marked at the collection holding the alias."""

    def __init__(self, problem: str, node: yaml.Node):
        super().__init__(problem=problem, problem_mark=node.start_mark)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [child for pair in node.value for child in pair]
    return node.value if isinstance(node, yaml.SequenceNode) else []


def refuse_alias_bombs(root: yaml.Node) -> None:
    """Walks the node tree once, each node's repeats counted from its size (an alias is the node it names, met again):
    raises AliasesRefused past MAX_ALIAS_REPEATS, or at an alias inside its own value. Iterative, so that deep nesting
    cannot pass Python's recursion limit."""
    sizes: dict[int, int] = {}  # id(node) -> the values it stands for, once walked
    walking: set[int] = {id(root)}
    stack = [(root, iter(_children(root)))]
    totals = [1]  # the size so far of each node on the stack
    repeats = 0
    while stack:
        node, children = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            walking.discard(id(node))
            sizes[id(node)] = size = totals.pop()
            if totals:
                totals[-1] += size
        elif id(child) in sizes:
            repeats += sizes[id(child)]
            totals[-1] += sizes[id(child)]
            if repeats > MAX_ALIAS_REPEATS:
                raise AliasesRefused(
                    f"aliases repeat more than {MAX_ALIAS_REPEATS} values by here: anchors nested in anchors make "
                    "this small file huge once read, so the relay refuses it", node)
        elif id(child) in walking:
            raise AliasesRefused("an alias inside the value it names: a document without end", node)
        else:
            walking.add(id(child))
            stack.append((child, iter(_children(child))))
            totals.append(1)
