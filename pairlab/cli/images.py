"""`pairlab images build|list|prune`: the images of containers/images.yaml, built locally.

No image registry is needed: the base image comes from Debian packages (debootstrap),
everything else is built on it. Builds are idempotent (an image whose input hash is
unchanged is reused) and show their progress on stderr; the tags go to stdout.
"""

from __future__ import annotations

from typing import Annotated

import typer

from pairlab.cli.output import emit_json


def register(app: typer.Typer) -> None:
    images = typer.Typer(
        help="Build, list and prune the images pairlab runs (containers/images.yaml).",
        no_args_is_help=True,
    )
    app.add_typer(images, name="images")

    @images.command("build")
    def build_cmd(
        names: Annotated[
            list[str] | None,
            typer.Argument(help="Images to build (default: all); what they are built on comes too"),
        ] = None,
        force: Annotated[
            bool, typer.Option("--force", help="Rebuild the named images even when current")
        ] = False,
        as_json: Annotated[bool, typer.Option("--json")] = False,
    ) -> None:
        """Build what is missing or stale, reuse the rest (cached by tag and input hash)."""
        from pairlab.adapters.images.build import build_images

        results = build_images(names or [], force=force)
        if as_json:
            emit_json({"images": [r.to_json() for r in results]})
            return
        for result in results:
            typer.echo(result.tag)

    @images.command("list")
    def list_cmd(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
        """Every registry image and every pypi intervention's derived image: present, current
        (inputs unchanged), size."""
        from pairlab.adapters.images.inventory import list_images

        rows = list_images()
        if as_json:
            emit_json({"images": rows})
            return
        width = max([10, *(len(str(r["name"])) for r in rows)])
        tag_width = max([36, *(len(str(r["tag"])) for r in rows)])
        for row in rows:
            state = (
                "absent"
                if not row["present"]
                else {True: "current", False: "stale", None: "present"}[row["current"]]
            )
            size = f"{row['size_mb']:.0f} MB" if row["size_mb"] is not None else "-"
            typer.echo(f"{row['name']:<{width}} {row['tag']:<{tag_width}} {state:<8} {size}")

    @images.command("prune")
    def prune_cmd(
        dry_run: Annotated[
            bool, typer.Option("--dry-run", help="Only print what would go")
        ] = False,
    ) -> None:
        """Remove superseded pairlab images (older input hashes, build stages)."""
        from pairlab.adapters.images.inventory import prune

        removed = prune(dry_run=dry_run)
        typer.echo(f"{'would remove' if dry_run else 'removed'} {len(removed)} image(s)")
