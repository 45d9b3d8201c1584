"""Marquee's URLs plus one view that fails, for the 500 page's test."""

from django.urls import path

from config.urls import urlpatterns as marquee


def boom(request):
    raise RuntimeError("a bug")


urlpatterns = [path("boom/", boom), *marquee]
