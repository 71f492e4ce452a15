// The lesson's budget (7 B, seq 2048, hidden 4096, 32 layers, mixed) for a
// batch of 2^slider, drawn as one stacked bar with its labels.
const canvas = document.getElementById('budget-chart');
const ctx = canvas.getContext('2d');
const colours = ['#0072B2', '#56B4E9', '#009E73', '#E69F00', '#D55E00'];
const names = ['Parameters', 'Gradients', 'Master weights', 'Optimizer state', 'Activations'];
function terms(batch) {
  const p = 7e9;
  return [p * 2, p * 2, p * 4, p * 8, 34 * 32 * batch * 2048 * 4096 * 2].map((b) => b / 1e9);
}
function draw(batch) {
  const t = terms(batch);
  const total = t.reduce((a, b) => a + b, 0);
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  let y = 320;
  t.forEach((v, i) => {
    const h = (v / total) * 280;
    ctx.fillStyle = colours[i];
    ctx.fillRect(120, y - h, 240, h);
    y -= h;
    ctx.fillStyle = '#222';
    ctx.font = '13px sans-serif';
    ctx.fillText(`${names[i]} ${v.toFixed(1)} GB`, 400, 300 - i * 24);
  });
  ctx.fillText(`${total.toFixed(1)} GB`, 200, y - 6);
}
const slider = document.getElementById('batch-slider');
slider.addEventListener('input', () => draw(2 ** Number(slider.value)));
draw(2 ** Number(slider.value));
