"""Build configuration for the optional native ristretto255 extension (docs/native.md).

Everything else lives in pyproject.toml.  ``optional=True``: if no C compiler or Python headers
are present, the install still succeeds and mpc.ristretto falls back to libsodium.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "mpc._ristretto",
            sources=["mpc/_ristretto.c"],
            depends=["mpc/_ristretto_group.h"],
            extra_compile_args=["-O3"],
            optional=True,
        )
    ]
)
