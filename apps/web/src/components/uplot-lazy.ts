// uPlot and its stylesheet, in one chunk loaded by the first chart.
import 'uplot/dist/uPlot.min.css';

export { default } from 'uplot';
