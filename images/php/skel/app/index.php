<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>podhost: PHP pod</title></head>
<body>
<h1>podhost</h1>
<p>Your PHP pod is running on PHP <?= htmlspecialchars(PHP_VERSION) ?>.
Upload your app to <code>~/app</code> to replace this page.</p>
</body>
</html>
