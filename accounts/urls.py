from django.urls import path

from accounts import views

app_name = "accounts"
urlpatterns = [
    path("", views.account, name="home"),
    path("signup/", views.signup, name="signup"),
    path("claim/", views.claim_request, name="claim_request"),
    path("claim/<str:uidb64>/<str:token>/", views.claim, name="claim"),
]
