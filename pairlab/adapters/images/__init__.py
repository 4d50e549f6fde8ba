"""The images wing: every image pairlab builds with no registry.

``registry`` (containers/images.yaml: specs, tags, prefix), ``build_inputs`` (build context
and input hash), ``build`` (build / reuse in dependency order, ``ensure_image``),
``build_lock`` (one builder per tag across processes), ``inventory`` (list, prune),
``engine`` (image inspect through the engine's API), ``clients`` (the real-CLI images from
the wheels uv.lock pins, one shared Dockerfile), ``locked_wheels`` (those wheels,
verified), ``intervention_images`` (a pypi intervention's image derived from a client
image, built on first use) and ``docker_cli`` (the one ``docker`` command runner).
"""
