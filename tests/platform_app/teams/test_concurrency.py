"""Races stopped by the database: two owners demoting each other at once leave one owner."""
import functools

import pytest
from django.db import connection

from platform_app.models import Membership
from tests.conftest import all_at_once
from tests.factories import MembershipFactory, UserFactory


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_demotions_keep_an_owner(as_user):
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL")
    first = MembershipFactory(user=UserFactory(), role="owner")
    workspace = first.workspace
    second = MembershipFactory(workspace=workspace, user=UserFactory(), role="owner")
    clients = {m.pk: as_user(m.user) for m in (first, second)}

    def demote(actor, target):
        return clients[actor.pk].patch(f"/v1/orgs/{workspace.slug}/members/{target.pk}", {"role": "admin"},
                                       format="json").status_code

    statuses = all_at_once([functools.partial(demote, first, second), functools.partial(demote, second, first)])
    assert Membership.objects.filter(workspace=workspace, role="owner").count() == 1
    # the loser is no longer an owner when its turn comes (403), or would demote the last owner (409)
    assert sorted(statuses) in ([200, 403], [200, 409])
