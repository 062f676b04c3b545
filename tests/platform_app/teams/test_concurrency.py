"""Races stopped by the database: two owners demoting each other at once leave one owner."""
import threading

import pytest
from django.db import connection

from platform_app.models import Membership
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
    barrier, statuses = threading.Barrier(2), []

    def demote(actor, target):
        barrier.wait()
        res = clients[actor.pk].patch(f"/v1/orgs/{workspace.slug}/members/{target.pk}", {"role": "admin"},
                                      format="json")
        statuses.append(res.status_code)
        connection.close()

    threads = [threading.Thread(target=demote, args=(first, second)),
               threading.Thread(target=demote, args=(second, first))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert Membership.objects.filter(workspace=workspace, role="owner").count() == 1
    # the loser is no longer an owner when its turn comes (403), or would demote the last owner (409)
    assert sorted(statuses) in ([200, 403], [200, 409])
