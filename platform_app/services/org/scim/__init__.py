"""SCIM 2.0 provisioning of one workspace (RFC 7643 resources, RFC 7644 operations): its directory creates, changes
and deactivates Users and Groups, and the platform keeps accounts and memberships in step (docs/org.md).

- A User stands for a platform account, found by its email (the primary of `emails`, else the first, else
  `userName` when it is an address) or created for it. An existing account is linked only when it is already a
  member of the workspace (its owner consented); any other is 409 `uniqueness`. When the workspace lists `allowedDomains`, the email must
  be in one of them. `userName` is unique in the workspace, case-insensitively (409 `uniqueness`), and so is the
  account.
- An active User is a member; `active: false` or DELETE removes the membership and at once revokes the user's API
  tokens bound to the workspace and the sessions started through its single sign-on. An owner is never removed this
  way (403): an owner makes them another role first.
- Roles: a Group named like a role (`admin`, `developer`, `billing`, `viewer`; case-insensitive) gives its members
  that role, the highest when several; a member in none of them gets the SSO settings' default role, once SCIM has
  managed their role (a member who joined otherwise keeps theirs until a role group names them). Owners are never
  changed by SCIM.
Every write locks the workspace row: one SCIM change of a workspace at a time, so uniqueness and roles stay exact.
"""
from platform_app.services.org.scim.common import SCHEMA_GROUP, SCHEMA_PATCH, SCHEMA_USER, ScimError
from platform_app.services.org.scim.groups import (scim_group_create, scim_group_delete, scim_group_patch,
                                                   scim_group_replace)
from platform_app.services.org.scim.lookups import scim_group_get, scim_groups, scim_page, scim_user_get, scim_users
from platform_app.services.org.scim.users import (account_used_elsewhere, scim_user_create, scim_user_delete,
                                                  scim_user_patch, scim_user_replace)

__all__ = ["SCHEMA_GROUP", "SCHEMA_PATCH", "SCHEMA_USER", "ScimError", "account_used_elsewhere", "scim_group_create",
           "scim_group_delete", "scim_group_get", "scim_group_patch", "scim_group_replace", "scim_groups",
           "scim_page", "scim_user_create", "scim_user_delete", "scim_user_get", "scim_user_patch",
           "scim_user_replace", "scim_users"]
