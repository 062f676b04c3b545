"""Graduation: a project exported as a bundle with a one-time redeem code, and redeemed into a workspace of this
platform or of another instance of it (docs/graduation.md). The work is split by concern:

- `graduation_bundle`: the format, the keys a code gives an export, the seal and the signature;
- `graduation_export`: the exporting side (the bundle, the code, the purge of expired bundles);
- `graduation_validate`: reading a bundle, every part checked by its API's input serializer (handed in by the
  API layer: `api/resources/graduate_inputs.py`) before anything is made;
- `graduation_import`: the redeeming side (the claim, then the project and its parts, in one transaction).

This module keeps the names callers use.
"""
from platform_app.services.resources.graduation_bundle import (CODE_PREFIX, FORMAT, TOKEN_PREFIX,  # noqa: F401
                                                               AlreadyRedeemed, BundleInvalid, Expired, Seal,
                                                               bundle_open, bundle_pack)
from platform_app.services.resources.graduation_export import (graduation_export, graduation_status,  # noqa: F401
                                                               graduations_of, graduations_purge)
from platform_app.services.resources.graduation_import import graduation_redeem  # noqa: F401
