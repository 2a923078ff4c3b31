"""Every architecture at a small size with inputs for it, and every strategy's kernel for an algebra: the cases
the module and export tests share."""
import numpy as np

from product_interactions import kernels
from product_interactions.interactions.architectures import (attention, convolution, deep_ls2t, dynamical,
                                                             dynamical_block, gating, ls2t, mamba, se3_attention,
                                                             ssm, tfn)

SEQUENCE = np.random.default_rng(0).standard_normal((2, 6, 4))
POINTS, FEATURES = np.random.default_rng(1).standard_normal((2, 5, 3)), np.random.default_rng(2).standard_normal(
    (2, 5, 4, 2))
MODELS = [(attention(d_model=4, heads=2), (SEQUENCE,)), (gating(channels=4), (SEQUENCE,)),
          (convolution(channels_in=4, channels_out=2, size=3), (SEQUENCE,)), (ssm(channels=4, d_state=2), (SEQUENCE,)),
          (mamba(d_model=4, d_state=2), (SEQUENCE,)), (dynamical(d_model=4), (SEQUENCE,)),
          (dynamical_block(d_model=4, d_conv=2), (SEQUENCE,)),
          (ls2t(d_in=4, width=2, order=2), (SEQUENCE,)), (deep_ls2t(d_in=4, widths=(2, 2), order=2), (SEQUENCE,)),
          (tfn(lmax=1, channels_in=2, channels_out=2), (POINTS, FEATURES)),
          (se3_attention(lmax=1, channels_in=2, channels=2), (POINTS, FEATURES))]


def applicable_kernels(algebra):
    """(strategy, kernel) for each strategy of the registry that can represent `algebra`."""
    for name in kernels.STRATEGIES:
        try:
            yield name, kernels.product(algebra, strategy=name)
        except ValueError:                                    # the strategy does not apply
            continue
