app_name = "shop"
urlpatterns: list = []
