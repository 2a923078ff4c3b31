"""LS2T: low-rank Seq2Tens layers <l_m, Phi(phi(x))> for N rank-1 functionals per level m = 1..M, and deep LS2T.

One layer runs, in order (each optional):

1. ``time``: append t / (n - 1) as a last coordinate, n the sequence's own length (mask);
2. ``difference``: x_t - x_{t-1}, with x_{-1} = 0;
3. ``static``: a time-distributed feature map phi: ``"dense"`` (linear, or an MLP through ``hidden`` widths and
   ``activation``) or ``"convolution"`` (causal, ``kernel_size`` taps: the zero-padded convolution of
   `interactions.architectures.convolution`, evaluated by time lags), to ``features`` coordinates;
4. the functionals by the recursion of `kernels.scans.low_rank`, O(M L N d): ``weights="recursive"``
   (l_m = v^1 (x) ... (x) v^m, levels share prefixes) or ``"independent"`` (l_m = v^1_m (x) ... (x) v^m_m,
   O(M^2 L N d)); forward over the windows [0, t]; ``reverse`` over [t, L-1] (the forward recursion on the
   reversed sequence, so there l_m = v^m (x) ... (x) v^1); ``bidirectional``: both, concatenated;
5. ``normalise``: each level's N outputs standardised (per sequence and time step).

The output is (batch, M N), level m in columns (m-1) N .. m N - 1, or (batch, length, M N) over expanding windows
with ``return_sequences``; bidirectional doubles the last axis (forward, then reverse).  Padding (mask 0, at the
end of each row) changes no output at a kept point; padded points take the value of the last window.

Initialisation.  For features x_t independent over time with E x_t x_t^T = I (h coordinates) and v^k ~ N(0, s_k^2 I)
independent, the cross terms of distinct index tuples vanish and E <l_m, Phi_m(x)>^2 = C(L, m) prod_{k<=m} h s_k^2.
So "recursive" takes h s_1^2 = 1 / L and h s_k^2 = k / (L - k + 1) (the product is 1 / C(L, m)), "independent"
h s_{m,k}^2 = C(L, m)^(-1/m): every level has variance 1 at L = ``typical_length``.  Static maps start at weights
N(0, 1 / fan-in) and zero biases, which keeps unit-variance inputs at unit variance.

>>> import numpy as np
>>> layer = ls2t(d_in=2, width=3, order=2, static=None)
>>> sorted(layer.parameters.items())
[('V', (2, 2, 3))]
>>> params = {"V": np.ones((2, 2, 3))}
>>> x = np.array([[[1., 0.], [0., 1.], [1., 1.]]])
>>> layer.apply(params, x)[0]                    # level 1: sum of <1, x_t>; level 2: sum_{s<t} <1, x_s><1, x_t>
array([4., 4., 4., 5., 5., 5.])
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import DTypeLike

from ...algebra.algebra import check_choice, check_count, check_flag
from ...kernels.arrays import adopt, common_precision, counting, with_jax_defaults
from ...kernels.scans import low_rank as low_rank_kernels

from ...kernels.arrays import POINTWISE as NUMERIC
from ..feature_map import check_sequences, increments, mask_like, zero_padding
from .model import check_dtype, check_params, check_seed, check_width, parameter_summary

if TYPE_CHECKING:
    from ...kernels.arrays import Engine

NORMALISE_EPSILON = 1e-5


class LS2T:
    """One LS2T layer (see the module docstring); `parameters`, `init(seed)`, `apply(params, x, mask=None)`."""

    def __init__(self, d_in: int, width: int, order: int, weights: str = "recursive", static: str | None = "dense",
                 features: int | None = None, hidden: Iterable[int] = (), activation: str = "tanh",
                 kernel_size: int = 3, difference: bool = False, time: bool = False, normalise: bool = False,
                 return_sequences: bool = False, reverse: bool = False, bidirectional: bool = False,
                 typical_length: int = 64) -> None:
        self.d_in, self.width, self.order = (check_width(v, a) for v, a in
                                             ((d_in, "d_in"), (width, "width"), (order, "order")))
        if not isinstance(weights, str) or weights not in ("recursive", "independent"):
            raise ValueError(f"weights: expected 'recursive' or 'independent', got {weights!r:.60}")
        if static is not None and (not isinstance(static, str) or static not in ("dense", "convolution")):
            raise ValueError(f"static: expected None, 'dense' or 'convolution', got {static!r:.60}")
        self.weights, self.static = weights, static
        self.activation = check_choice(activation, sorted(NUMERIC), "activation")
        self.difference, self.time, self.normalise = (check_flag(v, a) for v, a in (
            (difference, "difference"), (time, "time"), (normalise, "normalise")))
        self.return_sequences, self.reverse, self.bidirectional = (check_flag(v, a) for v, a in (
            (return_sequences, "return_sequences"), (reverse, "reverse"), (bidirectional, "bidirectional")))
        if not isinstance(hidden, (tuple, list)):
            raise TypeError(f"hidden: expected a tuple of layer widths, got {type(hidden).__name__} {hidden!r:.60}")
        self.hidden = tuple(check_width(h, f"hidden[{i}]") for i, h in enumerate(hidden))
        self.kernel_size = check_width(kernel_size, "kernel_size")
        self.typical_length = check_count(typical_length, "typical_length (at least order)", minimum=self.order)
        self.d_static = self.d_in + int(self.time)
        if static is None and features not in (None, self.d_static):
            raise ValueError(f"features: without a static map the features are the {self.d_static} input "
                             f"coordinates, got {features!r}")
        self.features = self.d_static if features is None else check_width(features, "features")
        self.slots = self.order * (self.order + 1) // 2 if weights == "independent" else self.order

    # ------------------------------------------------------------------ parameters
    @property
    def parameters(self) -> dict[str, tuple[int, ...]]:
        """Parameter name -> shape: static map (W0, b0, W1, ... or K, b), functionals V (features, slots,
        width) and V_reverse when bidirectional (slots: see `kernels.scans.low_rank`)."""
        shapes: dict[str, tuple[int, ...]] = {}
        if self.static == "dense":
            sizes = (self.d_static,) + self.hidden + (self.features,)
            for i, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
                shapes[f"W{i}"], shapes[f"b{i}"] = (n_out, n_in), (n_out,)
        elif self.static == "convolution":
            shapes["K"], shapes["b"] = (self.kernel_size, self.features, self.d_static), (self.features,)
        for name, _ in self._directions():
            shapes[name] = (self.features, self.slots, self.width)
        return shapes

    def slot_scales(self) -> np.ndarray:
        """The standard deviation of each slot's vectors (see "Initialisation" in the module docstring)."""
        L, h, M = self.typical_length, self.features, self.order
        if self.weights == "recursive":
            variances = [1 / L] + [k / (L - k + 1) for k in range(2, M + 1)]
        else:
            variances = [math.comb(L, m) ** (-1 / m) for k in range(1, M + 1) for m in range(k, M + 1)]
        return np.sqrt(np.array(variances) / h)

    def __repr__(self) -> str:
        return (f"<LS2T: d_in {self.d_in}, width {self.width}, order {self.order}, {self.weights} weights; "
                f"{parameter_summary(self.parameters)}>")

    def init(self, seed: int | np.random.Generator = 0, dtype: DTypeLike = np.float64) -> dict[str, np.ndarray]:
        """Seeded parameters: static weights N(0, 1 / fan-in), zero biases, functionals by `slot_scales`."""
        rng, dtype = check_seed(seed), check_dtype(dtype)
        params = {}
        for name, shape in self.parameters.items():
            if name.startswith("b"):
                params[name] = np.zeros(shape)
            elif name.startswith("V"):
                params[name] = self.slot_scales()[:, None] * rng.standard_normal(shape)
            else:
                fan_in = self.kernel_size * self.d_static if name == "K" else shape[1]
                params[name] = rng.standard_normal(shape) / np.sqrt(fan_in)
        return {name: value.astype(dtype) for name, value in params.items()}

    # ------------------------------------------------------------------ numerics
    def _directions(self) -> list[tuple[str, bool]]:
        return [("V", False), ("V_reverse", True)] if self.bidirectional else [("V", self.reverse)]

    def _time(self, engine: Engine, x: Any, mask: Any) -> Any:
        """x with t / (n - 1) appended, n each sequence's length (`mask`: in x's library, `mask_like`)."""
        batch, length, _ = tuple(x.shape)
        steps = engine.constant(counting(length, "float64"), x)[None, :]          # 0, 1, ..., L - 1, kept
        if mask is None:
            t = engine.broadcast_to(steps / max(length - 1, 1), (batch, length))
        else:
            n = engine.sum(engine.floats(mask, x), axis=1)
            t = steps / engine.maximum(n - 1, 1.0)[:, None]
        return engine.concatenate([x, t[:, :, None]], axis=2)

    def _static_map(self, engine: Engine, params: Mapping[str, Any], x: Any) -> Any:
        if self.static == "dense":
            layers = len(self.hidden) + 1
            for i in range(layers):
                x = x @ engine.swapaxes(params[f"W{i}"], 0, 1) + params[f"b{i}"]
                x = NUMERIC[self.activation](x, engine) if i < layers - 1 else x
        elif self.static == "convolution":
            K, length = params["K"], x.shape[1]
            lags = engine.concatenate([engine.zeros((x.shape[0], self.kernel_size - 1, x.shape[2]), x), x], axis=1)
            x = sum(lags[:, self.kernel_size - 1 - k:self.kernel_size - 1 - k + length] @ engine.swapaxes(K[k], 0, 1)
                    for k in range(self.kernel_size)) + params["b"]
        return x

    def _functionals(self, engine: Engine, features: Any, V: Any, reverse: bool) -> Any:
        y = low_rank_kernels.low_rank(engine.flip(features, 1) if reverse else features, V, self.order,
                                      self.weights == "independent", self.return_sequences)
        y = engine.flip(y, 1) if reverse and self.return_sequences else y
        if self.normalise:
            centred = y - engine.mean(y, axis=-1, keepdims=True)
            y = centred / engine.sqrt(engine.mean(centred ** 2, axis=-1, keepdims=True) + NORMALISE_EPSILON)
        return engine.reshape(y, tuple(y.shape[:-2]) + (y.shape[-2] * y.shape[-1],))     # -1: ambiguous when empty

    @with_jax_defaults
    def apply(self, params: Mapping[str, Any], x: Any, mask: Any = None) -> Any:
        """The layer on x (batch, length, d_in); mask (batch, length) marks kept points (ones, then padding).  x
        and the parameters may be numpy, torch or JAX arrays (`kernels.arrays.registry`)."""
        x, mask = check_sequences(x, mask, self.d_in)
        return self._checked_apply(params, x, mask)

    def _checked_apply(self, params: Mapping[str, Any], x: Any, mask: Any) -> Any:
        """`apply` on x and mask as `check_sequences` returns them."""
        engine, arrays = adopt({"x": x, **check_params(params, self.parameters)})
        arrays, half = common_precision(engine, arrays)        # the low-rank scan adds up its rounding: in float32
        x, params = arrays.pop("x"), arrays
        mask = mask_like(x, mask)                               # converted once, used up to five times
        x = zero_padding(self._time(engine, x, mask) if self.time else x, mask)
        x = increments(x, mask, basepoint=True) if self.difference else x
        features = zero_padding(self._static_map(engine, params, x), mask)
        y = engine.concatenate([self._functionals(engine, features, params[name], reverse)
                                for name, reverse in self._directions()], axis=-1)
        return y if half is None else engine.cast(y, half)

    def to_torch(self, seed: int | np.random.Generator = 0, dtype: Any = np.float64) -> Any:
        """This layer as a `torch.nn.Module` (`interactions.torch_module`)."""
        from ..torch_module import to_torch
        return to_torch(self, seed, dtype)

    @property
    def out_width(self) -> int:
        """The size of the output's last axis."""
        return self.order * self.width * (2 if self.bidirectional else 1)


def ls2t(d_in: int, width: int = 64, order: int = 4, **options: Any) -> LS2T:
    """An LS2T layer on (batch, length, d_in) sequences; options as `LS2T` (see the module docstring)."""
    return LS2T(d_in, width, order, **options)


class DeepLS2T:
    """Stacked sequence-to-sequence LS2T layers; layer i's parameters are named ``"layer{i}/<name>"``."""

    def __init__(self, d_in: int, widths: Sequence[int] = (64, 64), order: int = 4, difference_between: bool = False,
                 return_sequences: bool = False, **options: Any) -> None:
        if not isinstance(widths, (tuple, list)) or not widths:
            raise ValueError(f"widths: expected a non-empty tuple of layer widths, got {widths!r:.60}")
        widths = [check_width(w, f"widths[{i}]") for i, w in enumerate(widths)]
        return_sequences = check_flag(return_sequences, "return_sequences")
        difference_between = check_flag(difference_between, "difference_between")
        self.layers: list[LS2T] = []
        for i, width in enumerate(widths):
            last = i == len(widths) - 1
            if i:
                options = {**options, "static": "dense", "hidden": (), "features": None, "time": False,
                           "difference": difference_between}
            layer = LS2T(d_in if i == 0 else self.layers[-1].out_width, width, order,
                         return_sequences=return_sequences if last else True, **options)
            self.layers.append(layer)

    @property
    def parameters(self) -> dict[str, tuple[int, ...]]:
        """Parameter name ("layer{i}/<name of LS2T.parameters>") -> shape."""
        return {f"layer{i}/{name}": shape for i, layer in enumerate(self.layers)
                for name, shape in layer.parameters.items()}

    def __repr__(self) -> str:
        return f"<DeepLS2T: {len(self.layers)} LS2T layers; {parameter_summary(self.parameters)}>"

    def init(self, seed: int | np.random.Generator = 0, dtype: DTypeLike = np.float64) -> dict[str, np.ndarray]:
        """Every layer's `LS2T.init`, drawn from one seeded generator."""
        rng = check_seed(seed)
        return {f"layer{i}/{name}": value for i, layer in enumerate(self.layers)
                for name, value in layer.init(rng, dtype).items()}

    def to_torch(self, seed: int | np.random.Generator = 0, dtype: Any = np.float64) -> Any:
        """These layers as a `torch.nn.Module` (`interactions.torch_module`)."""
        from ..torch_module import to_torch
        return to_torch(self, seed, dtype)

    @with_jax_defaults
    def apply(self, params: Mapping[str, Any], x: Any, mask: Any = None) -> Any:
        """The layers in turn on x (batch, length, d_in), each with the same mask (checked once, and converted
        once into the library the layers compute in)."""
        x, mask = check_sequences(x, mask, self.layers[0].d_in)
        _, arrays = adopt({"x": x, **check_params(params, self.parameters)})       # x in the layers' library
        x, params = arrays.pop("x"), arrays
        mask = mask_like(x, mask)
        for i, layer in enumerate(self.layers):
            prefix = f"layer{i}/"
            x = layer._checked_apply({name[len(prefix):]: params[name] for name in params.keys()
                                      if name.startswith(prefix)}, x, mask)
        return x


def deep_ls2t(d_in: int, widths: Sequence[int] = (64, 64), order: int = 4, difference_between: bool = False,
              return_sequences: bool = False, **options: Any) -> DeepLS2T:
    """Deep LS2T: the first layer takes `options` (static map, time, difference, weights, normalise, ...); later
    layers get a square linear static map and, with `difference_between`, differenced inputs; every layer but the
    last returns sequences.

    >>> import numpy as np
    >>> model = deep_ls2t(d_in=3, widths=(4, 2), order=2, normalise=True, difference_between=True)
    >>> params = model.init(seed=0)
    >>> model.apply(params, np.random.default_rng(0).standard_normal((5, 7, 3))).shape
    (5, 4)
    """
    return DeepLS2T(d_in, widths, order, difference_between, return_sequences, **options)
