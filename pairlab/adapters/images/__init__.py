"""The images wing: every image pairlab builds with no registry.

``registry`` (containers/images.yaml: input hashes, build, ensure, list, prune),
``clients`` (the real-CLI images from the wheels uv.lock pins), ``locked_wheels`` (those
wheels, verified) and ``docker_cli`` (the one ``docker`` command runner).
"""
