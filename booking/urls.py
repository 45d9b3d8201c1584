app_name = "booking"
urlpatterns: list = []
