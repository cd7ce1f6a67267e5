"""A trained model's weights for the browser: one JSON file per model.

Book section: Beyond the chapter, Attention that has learned (and the live
example of 3.3). The book's pages run a small JavaScript forward pass
(``book/_static/attention-live.js``) on weights that the build exports with
this module, so the widgets always show the model that the page trained.

A file holds ``{"kind": ..., "config": {...}, "state_dict": {name: nested
lists}}``. ``kind`` says which widget draws it (one of :data:`KINDS`):
``"learned"`` is a trained :class:`~attention.TinyAttentionModel`, with
``config`` the keyword arguments that rebuild it
(``TinyAttentionModel(**config)``) and ``state_dict`` every tensor of
``model.state_dict()`` under its own name; ``"running-example"`` is section
3.3's six embeddings (``config["words"]``, ``state_dict["inputs"]``).
Floats are written as the shortest decimals that read back to the same
float32, so a file is small and the model it describes is exactly the
trained one.

Only the build writes these files. A page's cell calls :func:`save_exports`
wherever it runs, and the function writes only when ``$ATTENTION_LIVE_DIR``
names a folder, as the Makefile's Sphinx commands do: a reader who runs
the page's notebook gets no file.
"""

from __future__ import annotations

import html
import inspect
import json
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch

from .checks import check_choice, check_module, check_tensor
from .learned import TinyAttentionModel

#: Where :func:`save_exports` writes when no folder is given: the Makefile sets
#: it for its HTML builds, and book/_ext/live_widgets.py reads the files there.
#: Unset (a reader's notebook), nothing is written.
FOLDER_VARIABLE = "ATTENTION_LIVE_DIR"

#: The kinds of export, each drawn by its own widget in attention-live.js.
KINDS = ("learned", "running-example")


def tiny_model_config(model: TinyAttentionModel) -> dict:
    """The keyword arguments that rebuild ``model`` with ``TinyAttentionModel``.

    Args:
        model: a :class:`~attention.TinyAttentionModel`.

    Returns:
        A dict of ``vocab_size``, ``d_model``, ``context_length``,
        ``num_heads``, ``use_positions`` and ``num_layers``.

    Example:
        >>> model = TinyAttentionModel(16, 8, context_length=5, num_heads=2)
        >>> tiny_model_config(model)  # doctest: +NORMALIZE_WHITESPACE
        {'vocab_size': 16, 'd_model': 8, 'context_length': 5, 'num_heads': 2,
         'use_positions': True, 'num_layers': 1}
    """
    check_module("model", model, TinyAttentionModel)
    # The widget adds a learned table or nothing; it does not rotate.
    check_choice("model.positions", model.positions, ["learned", "none"])
    return {
        "vocab_size": model.vocab_size,
        "d_model": model.tok_emb.embedding_dim,
        "context_length": model.context_length,
        "num_heads": model.attn.num_heads,
        "use_positions": model.pos_emb is not None,
        "num_layers": len(model.layers),
    }


def export(kind: str, config: Mapping, state_dict: Mapping[str, torch.Tensor]) -> dict:
    """A JSON-ready dict: its kind, ``config`` as given, every tensor as nested lists.

    Args:
        kind: which widget draws it, one of :data:`KINDS`.
        config: JSON values the widget needs, such as the keyword arguments
            of the model's constructor.
        state_dict: tensors by name, such as ``model.state_dict()``.

    Returns:
        ``{"kind": kind, "config": dict(config), "state_dict": {name: nested
        lists}}``; floats as the shortest decimals of their float32 value,
        booleans and integers as they are.

    Raises:
        ValueError: ``kind`` is not one of :data:`KINDS`.

    Example:
        >>> t = torch.tensor([[0.1, 1 / 3], [2.0, -0.5]])
        >>> export("learned", {"n": 2}, {"w": t, "mask": t > 1})
        {'kind': 'learned', 'config': {'n': 2}, 'state_dict': \
{'w': [[0.1, 0.33333334], [2.0, -0.5]], 'mask': [[False, False], [True, False]]}}
    """
    check_choice("kind", kind, list(KINDS))
    tensors = {}
    for name, t in state_dict.items():
        check_tensor(name, t)
        t = t.detach().cpu()
        if t.is_floating_point():
            # float32's shortest decimals: "0.1", not 0.10000000149011612
            values = t.float().numpy()
            shortest = [float(str(v)) for v in values.ravel()]  # v: np.float32
            tensors[name] = np.reshape(shortest, values.shape).tolist()
        else:
            tensors[name] = t.tolist()
    return {"kind": kind, "config": dict(config), "state_dict": tensors}


def export_tiny_model(model: TinyAttentionModel) -> dict:
    """:func:`export` of a :class:`~attention.TinyAttentionModel`.

    Args:
        model: the model.

    Returns:
        An export of kind ``"learned"``: the model's config
        (:func:`tiny_model_config`) and its whole ``state_dict``.

    Example:
        >>> model = TinyAttentionModel(4, 4, context_length=3, num_heads=1)
        >>> names = export_tiny_model(model)["state_dict"]
        >>> names.keys() == model.state_dict().keys()
        True
    """
    return export("learned", tiny_model_config(model), model.state_dict())


def load_tiny_model(path: str | Path, dtype: torch.dtype = torch.float64):
    """Rebuild the model a file of :func:`save_exports` describes.

    Args:
        path: the JSON file, an export of kind ``"learned"``.
        dtype: the floats of the rebuilt model. Default: ``torch.float64``,
            the precision of JavaScript's numbers.

    Returns:
        A :class:`~attention.TinyAttentionModel` in eval mode.

    Raises:
        ValueError: the file holds another kind of export.

    Example:
        >>> import tempfile
        >>> model = TinyAttentionModel(4, 4, context_length=3, num_heads=2)
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     [path] = save_exports({"m": export_tiny_model(model)}, folder)
        ...     again = load_tiny_model(path)
        >>> again.out_head.weight.dtype
        torch.float64
        >>> all(  # the float32 weights come back exactly
        ...     torch.equal(again.state_dict()[k].to(v.dtype), v)
        ...     for k, v in model.state_dict().items()
        ... )
        True
    """
    saved = json.loads(Path(path).read_text("utf-8"))
    if saved.get("kind") != "learned":
        raise ValueError(
            f"path must hold an export of kind 'learned', got kind "
            f"{saved.get('kind')!r} in {path}"
        )
    model = TinyAttentionModel(**saved["config"]).to(dtype)
    state = {
        name: torch.tensor(value, dtype=model.state_dict()[name].dtype)
        for name, value in saved["state_dict"].items()
    }
    model.load_state_dict(state)
    return model.eval()


def export_folder() -> Path | None:
    """The folder the build asked the exports to go to, or ``None``.

    ``$ATTENTION_LIVE_DIR`` (:data:`FOLDER_VARIABLE`), which the Makefile
    sets for its HTML builds; unset or empty everywhere else.

    Raises:
        ValueError: the variable holds a relative path. Each kernel runs in
            its page's folder, so a relative path would write into the book's
            source.

    Example:
        >>> import os
        >>> from unittest import mock
        >>> build = {FOLDER_VARIABLE: "/book/_build/attention-live"}
        >>> with mock.patch.dict(os.environ, build):  # a build
        ...     export_folder()
        PosixPath('/book/_build/attention-live')
        >>> with mock.patch.dict(os.environ, {FOLDER_VARIABLE: ""}):  # a reader
        ...     print(export_folder())
        None
    """
    value = os.environ.get(FOLDER_VARIABLE, "")
    if not value:
        return None
    folder = Path(value)
    if not folder.is_absolute():
        raise ValueError(
            f"${FOLDER_VARIABLE}: expected an absolute path (each kernel runs in "
            f"its page's folder), got {value!r}"
        )
    return folder


def save_exports(
    exports: Mapping[str, dict], folder: str | Path | None = None
) -> list[Path]:
    """Write each export to ``<folder>/<name>.json`` when a build asks for them.

    Args:
        exports: dicts from :func:`export`, by file name (without ``.json``).
        folder: where to write. Default: :func:`export_folder`, the folder
            the build names; when it names none, nothing is written.

    Returns:
        The paths written, in the order of ``exports``; an empty list when
        nothing was written.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     [path] = save_exports({"tiny": export("learned", {}, {})}, folder)
        ...     path.name, path.read_text()
        ('tiny.json', '{"kind":"learned","config":{},"state_dict":{}}')
        >>> from unittest import mock
        >>> with mock.patch.dict(os.environ, {FOLDER_VARIABLE: ""}):  # a reader
        ...     save_exports({"tiny": export("learned", {}, {})})
        []
    """
    if folder is None:
        folder = export_folder()
    if folder is None:
        return []
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in exports.items():
        path = folder / f"{name}.json"
        path.write_text(json.dumps(data, separators=(",", ":")), "utf-8")
        paths.append(path)
    return paths


def heatmap_colours(count: int = 256) -> list[str]:
    """The colour map of :func:`attention.plotting.heatmap`, as ``count`` colours.

    Needs matplotlib. The live heatmaps use these, so that they look like the
    page's static ones (colour ``k`` for values ``k / count`` of the way from
    the smallest to the largest weight, as ``imshow`` does).

    Example:
        >>> heatmap_colours(3)
        ['#f7fbff', '#6baed6', '#08306b']
    """
    import matplotlib

    from .plotting import heatmap

    name = inspect.signature(heatmap).parameters["cmap"].default
    cmap = matplotlib.colormaps[name].resampled(count)
    return [matplotlib.colors.to_hex(cmap(k)) for k in range(count)]


class LiveWidget:
    """The place of a live widget on a page: an empty ``<div>`` a notebook shows.

    Book section: Beyond the chapter, Attention that has learned. The page's
    script (``attention-live.js``) fills it; without that script (a notebook,
    a printout) it shows nothing. It carries the heatmaps' colours
    (:func:`heatmap_colours`).

    Args:
        names: the weights files it draws from (names without ``.json``).
        **data: more ``data-`` attributes, such as the first input.

    Example:
        >>> html = LiveWidget(["a", "b"], tokens=[3, 1])._repr_html_()
        >>> print(html[:76])
        <div class="attention-live" data-attention-live="a b" data-tokens="3,1" data
    """

    def __init__(self, names: list[str], **data: object) -> None:
        self.names = list(names)
        self.data = {**data, "colors": heatmap_colours()}

    def _repr_html_(self) -> str:
        attributes = [f'data-attention-live="{" ".join(self.names)}"']
        for key, value in self.data.items():
            if isinstance(value, (list, tuple)):
                value = ",".join(str(v) for v in value)
            attributes.append(f'data-{key}="{html.escape(str(value))}"')
        return f'<div class="attention-live" {" ".join(attributes)}></div>'
