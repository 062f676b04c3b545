"""`manage.py import_osm <file.osm.pbf|.osm> [--region NAME] [--country NAME]`"""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from warehouse_app.services.osm_import import osm_import


class Command(BaseCommand):
    help = "Build or refresh the warehouse directory from an OpenStreetMap extract (idempotent by OSM id)."

    def add_arguments(self, parser):
        parser.add_argument("file", help=".osm.pbf or .osm file")
        parser.add_argument("--region", default="", help="region of every facility (else from admin boundaries)")
        parser.add_argument("--country", default="", help="country of every facility (else from admin boundaries)")

    def handle(self, *args, file, region, country, **options):
        path = Path(file)
        if not path.is_file():
            raise CommandError(f"No such file: {file}")
        osm_import(path=path, region=region, country=country, progress=self.stdout.write)
