"""The dashboard's `{% path %}` tag gives exactly what `{% url %}` gives, for any value a row can hold."""
import pytest
from django.template import Context, Template
from django.urls import NoReverseMatch, reverse

from platform_app.templatetags.dashboard import path


@pytest.mark.parametrize("values", [("acme", "shop"), ("org_1a2b", "dpl_9z8y"), ("ünï cödé", "a b&c?d#e%f"),
                                    ("pathmarkone", "pathmarkzero"), ("x", "semi;colon:at@tilde~")])
def test_path_is_what_reverse_gives(values):
    for name in ("project", "deployment"):
        assert path(name, *values) == reverse(name, args=values)


def test_a_value_reverse_refuses_is_refused_the_same_way():
    for bad in ("", "a/b"):
        with pytest.raises(NoReverseMatch):
            path("project", "acme", bad)


def test_the_tag_escapes_as_the_url_tag_does():
    context = Context({"a": "o'k", "b": "<x>"})
    tags = Template("{% load dashboard %}{% path 'project' a b %}|{% url 'project' a b %}").render(context)
    ours, theirs = tags.split("|")
    assert ours == theirs
