"""Builds the optional CUPTI shim; everything else is in pyproject.toml.

The extension is optional: where no C compiler is present the package still installs, and the
CUPTI backend says why it is unavailable. No CUDA is needed to build it (it dlopens libcupti).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "deuteron.collect.backends.cupti._shim",
            sources=["deuteron/collect/backends/cupti/_shim.c"],
            libraries=["dl", "pthread"],
            extra_compile_args=["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Wno-missing-field-initializers"],
            optional=True,
        ),
        Extension(
            "deuteron.collect.backends.cupti._sampling",
            sources=["deuteron/collect/backends/cupti/_sampling.c"],
            libraries=["dl"],
            extra_compile_args=["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Wno-missing-field-initializers"],
            optional=True,
        ),
    ]
)
